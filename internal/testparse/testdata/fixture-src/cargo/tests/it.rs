#[test]
fn adds() {
    assert_eq!(tiny::add(1, 1), 2);
}

#[test]
fn adds_wrongly() {
    assert_eq!(tiny::add(1, 1), 3);
}
