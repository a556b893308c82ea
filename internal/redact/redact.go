// Package redact removes secrets from text before it is written anywhere a
// person or another program may read it: transcripts, logs and errors.
//
// A Redactor replaces two kinds of secret with [REDACTED]: the exact values it
// was given (typically the API keys from the environment) and strings that
// look like well-known credential formats (Anthropic, OpenAI, GitHub, AWS and
// Slack keys, bearer tokens and PEM private keys).
package redact

import (
	"bytes"
	"io"
	"regexp"
	"slices"
	"strings"
)

// Mask is what every secret is replaced with.
const Mask = "[REDACTED]"

// MinSecretLen is the shortest configured value treated as a secret: shorter
// values ("1", "true") would mask ordinary words everywhere.
const MinSecretLen = 8

// patterns are the credential formats redacted even when their value was
// never configured. Each matches the whole credential.
var patterns = []*regexp.Regexp{
	// PEM private keys of every kind (RSA, EC, OPENSSH, ENCRYPTED, plain).
	regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----`),
	// Anthropic (sk-ant-...), OpenAI project (sk-proj-...) and legacy keys.
	regexp.MustCompile(`sk-ant-[A-Za-z0-9_\-]{8,}`),
	regexp.MustCompile(`sk-proj-[A-Za-z0-9_\-]{8,}`),
	regexp.MustCompile(`sk-[A-Za-z0-9_\-]{20,}`),
	// GitHub personal, OAuth, user-to-server, server-to-server and refresh
	// tokens, and fine-grained personal access tokens.
	regexp.MustCompile(`gh[pousr]_[A-Za-z0-9]{20,}`),
	regexp.MustCompile(`github_pat_[A-Za-z0-9_]{20,}`),
	// AWS access key IDs (long-term and temporary).
	regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`),
	// Slack bot, app, user and refresh tokens.
	regexp.MustCompile(`xox[abpre]-[A-Za-z0-9\-]{10,}`),
}

// bearer keeps the scheme word so a reader still sees what was there.
var bearer = regexp.MustCompile(`(?i)\b(bearer)\s+[A-Za-z0-9._~+/\-]{8,}=*`)

// Redactor replaces secrets in text. Its methods are safe for concurrent use;
// a Writer it returns is not.
type Redactor struct {
	secrets  []string // longest first, so a secret containing another is masked whole
	replacer *strings.Replacer
}

// New returns a Redactor for the given secret values and the known credential
// formats. Values shorter than MinSecretLen are ignored.
func New(secrets ...string) *Redactor {
	var kept []string
	for _, s := range secrets {
		s = strings.TrimSpace(s)
		if len(s) >= MinSecretLen && !slices.Contains(kept, s) {
			kept = append(kept, s)
		}
	}
	// strings.Replacer tries the old strings in argument order at each
	// position, so longer secrets must come first.
	slices.SortFunc(kept, func(a, b string) int { return len(b) - len(a) })
	r := &Redactor{secrets: kept}
	if len(kept) > 0 {
		pairs := make([]string, 0, 2*len(kept))
		for _, s := range kept {
			pairs = append(pairs, s, Mask)
		}
		r.replacer = strings.NewReplacer(pairs...)
	}
	return r
}

// FromEnv returns a Redactor for the values of the secret-bearing variables in
// environ (KEY=value pairs, as from os.Environ): every variable whose name ends
// in _API_KEY, _KEY or _TOKEN or contains SECRET or PASSWORD.
func FromEnv(environ []string) *Redactor {
	var secrets []string
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if ok && IsSecretName(name) {
			secrets = append(secrets, value)
		}
	}
	return New(secrets...)
}

// IsSecretName reports whether an environment variable of this name holds a
// credential: names ending in _API_KEY, _KEY or _TOKEN, or containing SECRET
// or PASSWORD (case-insensitively).
func IsSecretName(name string) bool {
	n := strings.ToUpper(name)
	return strings.HasSuffix(n, "_API_KEY") || strings.HasSuffix(n, "_KEY") ||
		strings.HasSuffix(n, "_TOKEN") || n == "TOKEN" ||
		strings.Contains(n, "SECRET") || strings.Contains(n, "PASSWORD")
}

// Secrets reports how many configured values the Redactor masks.
func (r *Redactor) Secrets() int { return len(r.secrets) }

// String returns s with every secret replaced by Mask. A nil Redactor still
// masks the known credential formats.
func (r *Redactor) String(s string) string {
	if r != nil && r.replacer != nil {
		s = r.replacer.Replace(s)
	}
	for _, p := range patterns {
		s = p.ReplaceAllLiteralString(s, Mask)
	}
	return bearer.ReplaceAllString(s, "${1} "+Mask)
}

// Error wraps err so that its message is redacted; errors.Is and errors.As
// still see the original chain. A nil err stays nil.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	return &redactedError{err: err, msg: r.String(err.Error())}
}

type redactedError struct {
	err error
	msg string
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// maxPending bounds how much a Writer holds back waiting for a newline or for
// the end of a PEM block; past it, text is written out at a whitespace
// boundary (credentials contain no whitespace, so none is cut in two).
const maxPending = 64 << 10

// tailKeep is how much of an over-long line stays buffered when part of it
// is written early, so a credential near the end is still seen whole.
const tailKeep = 4 << 10

// Writer is an io.Writer that redacts a stream line by line. A secret split
// across two Write calls is still masked because nothing is written until its
// line is complete; a PEM private key block is held until its END line. Call
// Flush (or Close) at the end of the stream to write a final partial line.
type Writer struct {
	r       *Redactor
	w       io.Writer
	pending []byte
}

// Writer returns a redacting writer that writes to w.
func (r *Redactor) Writer(w io.Writer) *Writer {
	return &Writer{r: r, w: w}
}

// Write buffers p and writes out every complete line, redacted. It reports
// len(p) on success, as io.Writer requires, even though some of p may still be
// buffered.
func (w *Writer) Write(p []byte) (int, error) {
	w.pending = append(w.pending, p...)
	cut := w.safeCut()
	if cut > 0 {
		if err := w.emit(cut); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// safeCut returns how many pending bytes can be redacted and written now.
func (w *Writer) safeCut() int {
	cut := bytes.LastIndexByte(w.pending, '\n') + 1
	// Hold back an unterminated private key block from its BEGIN line.
	if begin := openPEM(w.pending[:cut]); begin >= 0 {
		cut = begin
	}
	if cut == 0 && len(w.pending) > maxPending {
		if begin := openPEM(w.pending); begin >= 0 {
			// A private key that never ends: mask the rest rather than leak it.
			return -1
		}
		limit := len(w.pending) - tailKeep
		cut = bytes.LastIndexAny(w.pending[:limit], " \t\r\n") + 1
		if cut == 0 {
			cut = limit
		}
	}
	return cut
}

// openPEM returns the offset of a BEGIN ... PRIVATE KEY line in b that has no
// END line after it, or -1.
func openPEM(b []byte) int {
	begin := bytes.LastIndex(b, []byte("-----BEGIN "))
	if begin < 0 {
		return -1
	}
	rest := b[begin:]
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	if !bytes.Contains(line, []byte("PRIVATE KEY-----")) {
		return -1
	}
	if bytes.Contains(rest, []byte("-----END ")) {
		return -1
	}
	return begin
}

func (w *Writer) emit(cut int) error {
	var out string
	if cut < 0 {
		// Unterminated private key past maxPending: write what precedes the
		// key and mask the key itself.
		begin := openPEM(w.pending)
		out = w.r.String(string(w.pending[:begin])) + Mask + "\n"
		w.pending = w.pending[:0]
	} else {
		out = w.r.String(string(w.pending[:cut]))
		w.pending = append(w.pending[:0], w.pending[cut:]...)
	}
	_, err := io.WriteString(w.w, out)
	return err
}

// Flush redacts and writes whatever is buffered, complete line or not. An
// unterminated private key block is masked whole.
func (w *Writer) Flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	if openPEM(w.pending) >= 0 {
		return w.emit(-1)
	}
	return w.emit(len(w.pending))
}

// Close flushes the buffer. It does not close the underlying writer.
func (w *Writer) Close() error { return w.Flush() }
