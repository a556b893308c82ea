package fake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Endpoint paths the server answers.
const (
	PathMessages        = "/v1/messages"
	PathChatCompletions = "/v1/chat/completions"
)

// Recorded is one request the server received.
type Recorded struct {
	Time     time.Time `json:"time"`
	Endpoint string    `json:"endpoint"`
	Model    string    `json:"model"`
	Stream   bool      `json:"stream"`
	// Turn and TurnIndex name the turn that answered; TurnIndex is -1 when no
	// turn matched.
	Turn      string          `json:"turn,omitempty"`
	TurnIndex int             `json:"turn_index"`
	Body      json.RawMessage `json:"body"`
}

// Server answers model requests from a script. It is safe for concurrent
// use: parallel conversations each take the first turn that matches them.
type Server struct {
	script *Script
	now    func() time.Time
	record io.Writer

	mu       sync.Mutex
	uses     []int // times each turn answered
	requests []Recorded
	recErr   error
}

// Option configures a Server.
type Option func(*Server)

// WithRecord writes every request as one JSON line to w.
func WithRecord(w io.Writer) Option { return func(s *Server) { s.record = w } }

// WithClock replaces the clock used for record times and response
// timestamps.
func WithClock(now func() time.Time) Option { return func(s *Server) { s.now = now } }

// NewServer returns a server answering from s.
func NewServer(s *Script, opts ...Option) *Server {
	srv := &Server{script: s, now: time.Now, uses: make([]int, len(s.Turns))}
	for _, o := range opts {
		o(srv)
	}
	return srv
}

// Requests returns every request received so far, in arrival order.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Recorded(nil), s.requests...)
}

// Remaining returns the turns that must answer once and have not yet.
func (s *Server) Remaining() []Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Turn
	for i, t := range s.script.Turns {
		if !t.Repeat && s.uses[i] == 0 {
			out = append(out, t)
		}
	}
	return out
}

// RecordErr returns the first error writing the request record, if any.
func (s *Server) RecordErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recErr
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var p protocol
	switch r.URL.Path {
	case PathMessages:
		p = anthropicProtocol{}
	case PathChatCompletions:
		p = openaiProtocol{}
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{
			"type":    "not_found_error",
			"message": fmt.Sprintf("fake model server: no endpoint %s (it serves POST %s and POST %s)", r.URL.Path, PathMessages, PathChatCompletions),
		}})
		return
	}
	if r.Method != http.MethodPost {
		p.writeError(w, http.StatusMethodNotAllowed, "", fmt.Sprintf("fake model server: %s needs POST, got %s", r.URL.Path, r.Method))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		p.writeError(w, http.StatusBadRequest, "", "fake model server: reading request body: "+err.Error())
		return
	}
	req, err := p.parse(body)
	if err != nil {
		p.writeError(w, http.StatusBadRequest, "", "fake model server: "+err.Error())
		return
	}

	idx, use, why := s.take(req, r.URL.Path, body)
	if idx < 0 {
		p.writeError(w, http.StatusBadRequest, "", why)
		return
	}
	turn := &s.script.Turns[idx]

	delay := s.script.Defaults.Delay
	if turn.Delay != nil {
		delay = *turn.Delay
	}
	if delay > 0 {
		t := time.NewTimer(time.Duration(delay))
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}

	f := turn.Fault
	if f != nil && f.Status != 0 {
		if f.RetryAfter > 0 {
			w.Header().Set("retry-after", fmt.Sprint(f.RetryAfter))
		}
		msg := f.Body
		if msg == "" {
			msg = fmt.Sprintf("fake model server: scripted fault from %s", turn.label(idx))
		}
		p.writeError(w, f.Status, "", msg)
		return
	}

	out := s.answer(turn, idx, use, req)
	if !req.Stream {
		if f != nil {
			// A dropped connection before any response.
			panic(http.ErrAbortHandler)
		}
		p.writeJSON(w, out)
		return
	}
	w.Header().Set(p.idHeader(), "req_fake_"+out.ID)
	ev := newEventWriter(w)
	limit, stall := 0, false
	if f != nil {
		if f.DropAfterEvents > 0 {
			limit = f.DropAfterEvents
		} else {
			limit, stall = f.StallAfterEvents, true
		}
	}
	ev.limit = limit
	p.stream(ev, out)
	if ev.cut {
		if stall {
			<-r.Context().Done()
			return
		}
		// Abort the connection without ending the chunked body, as a
		// dropped connection would.
		panic(http.ErrAbortHandler)
	}
}

// take picks the first turn with uses left whose matchers hold, consumes
// it and records the request. It returns the turn index and its use number,
// or -1 and the reason nothing matched.
func (s *Server) take(req *parsedRequest, endpoint string, body []byte) (int, int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	idx, use := -1, 0
	for i := range s.script.Turns {
		t := &s.script.Turns[i]
		if !t.Repeat && s.uses[i] > 0 {
			continue
		}
		if t.Match.mismatch(req) == "" {
			idx, use = i, s.uses[i]
			s.uses[i]++
			break
		}
	}
	rec := Recorded{Time: s.now().UTC(), Endpoint: endpoint, Model: req.Model, Stream: req.Stream, TurnIndex: idx, Body: compactJSON(body)}
	if idx >= 0 {
		rec.Turn = s.script.Turns[idx].Name
	}
	s.requests = append(s.requests, rec)
	if s.record != nil && s.recErr == nil {
		line, err := json.Marshal(rec)
		if err == nil {
			_, err = s.record.Write(append(line, '\n'))
		}
		s.recErr = err
	}
	if idx >= 0 {
		return idx, use, ""
	}
	return -1, 0, s.unmatched(req)
}

func (s *Server) unmatched(req *parsedRequest) string {
	var avail []string
	first := -1
	for i := range s.script.Turns {
		t := &s.script.Turns[i]
		if !t.Repeat && s.uses[i] > 0 {
			continue
		}
		if first < 0 {
			first = i
		}
		avail = append(avail, t.label(i))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "fake model server: no scripted turn matches this request (model %q, %d assistant messages, last user-side message %q)",
		req.Model, req.AssistantTurns, clip(req.LastUserSide, 120))
	if first < 0 {
		fmt.Fprintf(&b, "; all %d turns of the script are used up", len(s.script.Turns))
		return b.String()
	}
	fmt.Fprintf(&b, "; turns still available: %s; the first of them, %s, does not match because %s",
		strings.Join(avail, ", "), s.script.Turns[first].label(first), s.script.Turns[first].Match.mismatch(req))
	return b.String()
}

// output is a turn's answer, ready for a protocol to frame.
type output struct {
	ID         string
	Model      string
	Created    int64
	Text       string
	Calls      []outCall
	StopReason string
	Usage      Usage
	// includeUsage is the OpenAI request's stream_options.include_usage.
	includeUsage bool
}

type outCall struct {
	ID, Name string
	Args     string // JSON
}

func (s *Server) answer(t *Turn, idx, use int, req *parsedRequest) *output {
	o := &output{
		ID:      fmt.Sprintf("t%d_%d", idx, use),
		Model:   req.Model,
		Created: s.now().Unix(),
		Text:    t.Response.Text,

		includeUsage: req.IncludeUsage,
	}
	for i, tc := range t.Response.ToolCalls {
		args, _ := json.Marshal(tc.Input) // checked by ParseScript
		o.Calls = append(o.Calls, outCall{ID: fmt.Sprintf("t%d_%d_%d", idx, use, i), Name: tc.Name, Args: string(args)})
	}
	o.StopReason = t.Response.StopReason
	if o.StopReason == "" {
		o.StopReason = "end_turn"
		if len(o.Calls) > 0 {
			o.StopReason = "tool_use"
		}
	}
	switch {
	case t.Response.Usage != nil:
		o.Usage = *t.Response.Usage
	case s.script.Defaults.Usage != nil:
		o.Usage = *s.script.Defaults.Usage
	}
	return o
}

// protocol frames requests and answers for one provider's wire format.
type protocol interface {
	parse(body []byte) (*parsedRequest, error)
	writeJSON(w http.ResponseWriter, o *output)
	stream(ev *eventWriter, o *output)
	writeError(w http.ResponseWriter, status int, errType, msg string)
	// idHeader is the response header carrying the request id.
	idHeader() string
}

// parsedRequest is what matchers look at, the same for both protocols.
type parsedRequest struct {
	Model        string
	Stream       bool
	IncludeUsage bool
	System       string
	// UserSide holds the text of every user message and tool result.
	UserSide []string
	// LastUserSide is everything user-side after the last assistant message.
	LastUserSide   string
	AssistantTurns int
}

func (r *parsedRequest) containsUserSide(sub string) bool {
	for _, s := range r.UserSide {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// eventWriter writes server-sent events, flushing each, and stops after
// limit events when limit > 0.
type eventWriter struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	buf   []byte
	n     int
	limit int
	cut   bool
}

func newEventWriter(w http.ResponseWriter) *eventWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &eventWriter{w: w, rc: http.NewResponseController(w)}
}

// event writes one event; name may be empty (OpenAI sends data lines only).
// It reports false once the stream is cut.
func (e *eventWriter) event(name string, data []byte) bool {
	if e.cut {
		return false
	}
	if e.limit > 0 && e.n >= e.limit {
		e.cut = true
		return false
	}
	e.buf = e.buf[:0]
	if name != "" {
		e.buf = append(e.buf, "event: "...)
		e.buf = append(e.buf, name...)
		e.buf = append(e.buf, '\n')
	}
	e.buf = append(e.buf, "data: "...)
	e.buf = append(e.buf, data...)
	e.buf = append(e.buf, '\n', '\n')
	if _, err := e.w.Write(e.buf); err != nil {
		e.cut = true
		return false
	}
	_ = e.rc.Flush()
	e.n++
	return true
}

func (e *eventWriter) json(name string, v any) bool {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("fake: marshal %T: %v", v, err)) // only our own types reach here
	}
	return e.event(name, data)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// compactJSON returns the body as compact JSON, or as a JSON string when it
// is not JSON, so every record line is valid JSON.
func compactJSON(b []byte) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err == nil {
		return buf.Bytes()
	}
	s, _ := json.Marshal(string(b))
	return s
}

// splitText splits text into word-sized pieces, each word with the
// whitespace after it, the way models stream roughly a token at a time.
func splitText(s string) []string {
	var out []string
	start := 0
	inSpace := false
	for i, r := range s {
		space := r == ' ' || r == '\n' || r == '\t'
		if !space && inSpace {
			out = append(out, s[start:i])
			start = i
		}
		inSpace = space
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// splitArgs splits tool-call JSON into several chunks at rune boundaries,
// as providers stream arguments.
func splitArgs(s string) []string {
	size := len(s) / 4
	if size > 16 {
		size = 16
	}
	if size < 1 {
		size = 1
	}
	var out []string
	for len(s) > 0 {
		n := size
		if n >= len(s) {
			n = len(s)
		} else {
			for n < len(s) && s[n]&0xC0 == 0x80 {
				n++
			}
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// Listen serves srv on addr (e.g. "127.0.0.1:0") until stop is called or
// ctx ends. baseURL is the server's root: Anthropic clients use it as is,
// OpenAI clients use baseURL+"/v1".
func Listen(ctx context.Context, addr string, srv *Server) (baseURL string, stop func() error, err error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("fake model server: listen on %s: %w", addr, err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	var once sync.Once
	var stopErr error
	// closeServer is its own variable, not stop: the AfterFunc goroutine
	// must not read a variable this function goes on to assign.
	closeServer := func() error {
		once.Do(func() {
			stopErr = hs.Close()
			if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) && stopErr == nil {
				stopErr = err
			}
		})
		return stopErr
	}
	unregister := context.AfterFunc(ctx, func() { _ = closeServer() })
	stop = func() error {
		unregister()
		return closeServer()
	}
	return "http://" + ln.Addr().String(), stop, nil
}
