/// Adds two numbers.
///
/// ```
/// assert_eq!(tiny::add(2, 2), 5);
/// ```
pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(add(2, 2), 4);
    }

    #[test]
    fn adds_wrongly() {
        assert_eq!(add(2, 2), 5, "two and two");
    }

    #[test]
    fn panics() {
        let v: Vec<i32> = Vec::new();
        let _ = v[3];
    }

    #[test]
    #[ignore]
    fn ignored() {}
}
