package redact

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

func TestStringKnownFormats(t *testing.T) {
	pem := "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nabcdef==\n-----END RSA PRIVATE KEY-----"
	cases := []struct {
		name, in, want string
	}{
		{"anthropic", "key=sk-ant-api03-AbC_dEf-1234567890xyz end", "key=[REDACTED] end"},
		{"openai project", "sk-proj-abcdefghij1234567890", "[REDACTED]"},
		{"openai legacy", "use sk-abcdefghijklmnopqrstuvwx please", "use [REDACTED] please"},
		{"github classic", "ghp_0123456789abcdefghijABCDEFGHIJ", "[REDACTED]"},
		{"github oauth", "token gho_0123456789abcdefghijABCDEFGHIJ.", "token [REDACTED]."},
		{"github fine-grained", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "[REDACTED]"},
		{"aws", "AWS AKIAIOSFODNN7EXAMPLE id", "AWS [REDACTED] id"},
		{"slack", "xoxb-1234567890-abcdefghij", "[REDACTED]"},
		{"bearer", "Authorization: Bearer abc.DEF-123_456", "Authorization: Bearer [REDACTED]"},
		{"bearer lowercase", "authorization: bearer abcdefgh12345678", "authorization: bearer [REDACTED]"},
		{"pem", "before\n" + pem + "\nafter", "before\n[REDACTED]\nafter"},
		// Ordinary text that merely resembles a key prefix stays.
		{"short sk", "sk-learn is a library", "sk-learn is a library"},
		{"plain", "nothing to see here", "nothing to see here"},
	}
	r := New()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := r.String(c.in); got != c.want {
				t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestStringConfiguredValues(t *testing.T) {
	r := New("hunter2-is-my-password", "short", "hunter2-is-my-password-extended")
	if r.Secrets() != 2 {
		t.Errorf("Secrets() = %d, want 2 (the 5-byte value is too short to redact)", r.Secrets())
	}
	got := r.String("a hunter2-is-my-password-extended b hunter2-is-my-password c short")
	want := "a [REDACTED] b [REDACTED] c short"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestFromEnv(t *testing.T) {
	r := FromEnv([]string{
		"ANTHROPIC_API_KEY=custom-value-one-1234",
		"GITHUB_TOKEN=custom-value-two-1234",
		"MY_CLIENT_SECRET_VALUE=custom-value-three-1234",
		"DB_PASSWORD=custom-value-four-1234",
		"PATH=/usr/bin:/bin:/usr/local/bin",
		"SHORT_TOKEN=abc",
	})
	in := "custom-value-one-1234 custom-value-two-1234 custom-value-three-1234 custom-value-four-1234 /usr/bin:/bin:/usr/local/bin abc"
	want := "[REDACTED] [REDACTED] [REDACTED] [REDACTED] /usr/bin:/bin:/usr/local/bin abc"
	if got := r.String(in); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestError(t *testing.T) {
	r := New("super-secret-value")
	err := r.Error(&fs.PathError{Op: "open", Path: "super-secret-value", Err: fs.ErrNotExist})
	if strings.Contains(err.Error(), "super-secret-value") {
		t.Errorf("error not redacted: %v", err)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("errors.Is lost the wrapped error: %v", err)
	}
	if r.Error(nil) != nil {
		t.Error("Error(nil) != nil")
	}
}

func TestWriterSecretSplitAcrossWrites(t *testing.T) {
	secret := "sk-ant-api03-SPLITACROSSWRITES1234"
	r := New("configured-secret-99")
	var b strings.Builder
	w := r.Writer(&b)
	chunks := []string{
		"line one " + secret[:10], secret[10:20], secret[20:] + " end\nconfig", "ured-secr", "et-99 tail",
	}
	for _, c := range chunks {
		if _, err := w.Write([]byte(c)); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "sk-ant") || strings.Contains(b.String(), "configured") {
			t.Fatalf("partial secret written after chunk %q: %q", c, b.String())
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "line one [REDACTED] end\n[REDACTED] tail"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestWriterPEMAcrossLines(t *testing.T) {
	r := New()
	var b strings.Builder
	w := r.Writer(&b)
	lines := []string{
		"ok\n", "-----BEGIN OPENSSH PRIVATE KEY-----\n", "b3BlbnNzaC1rZXktdjEAAAAA\n",
		"AAAABG5vbmUAAAAEbm9uZQ\n", "-----END OPENSSH PRIVATE KEY-----\n", "done\n",
	}
	for _, l := range lines {
		w.Write([]byte(l))
		if strings.Contains(b.String(), "b3Blbn") || strings.Contains(b.String(), "AAAABG5") {
			t.Fatalf("key material written early: %q", b.String())
		}
	}
	w.Flush()
	if want := "ok\n[REDACTED]\ndone\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestWriterUnterminatedPEMMaskedOnFlush(t *testing.T) {
	var b strings.Builder
	w := New().Writer(&b)
	w.Write([]byte("x\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0B\n"))
	w.Close()
	if strings.Contains(b.String(), "MIIEvQ") || !strings.Contains(b.String(), Mask) {
		t.Errorf("unterminated key not masked: %q", b.String())
	}
}

func TestWriterLongLineWithoutNewline(t *testing.T) {
	var b strings.Builder
	w := New().Writer(&b)
	word := strings.Repeat("a", 99) + " "
	total := 0
	for total < 2*maxPending {
		w.Write([]byte(word))
		total += len(word)
	}
	if b.Len() == 0 {
		t.Fatalf("wrote nothing after %d bytes without a newline; the buffer is unbounded", total)
	}
	w.Flush()
	if b.Len() != total {
		t.Errorf("wrote %d bytes, want %d", b.Len(), total)
	}
}

func TestNilRedactorString(t *testing.T) {
	var r *Redactor
	if got := r.String("k=sk-ant-api03-abcdefghijkl"); got != "k="+Mask {
		t.Errorf("nil Redactor did not mask a known format: %q", got)
	}
}
