package agentrt

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"

	"github.com/sluice-run/sluice/internal/model"
)

// TranscriptEvent is one line of a delegation transcript (JSON Lines). Type
// is "start", "message", "tool_calls", "compaction" or "end".
type TranscriptEvent struct {
	Type string `json:"type"`
	Turn int    `json:"turn"`

	// start
	Role   string           `json:"role,omitempty"`
	Model  string           `json:"model,omitempty"`
	System []model.TextPart `json:"system,omitempty"`
	Tools  []string         `json:"tools,omitempty"`

	// message
	Message    *model.Message   `json:"message,omitempty"`
	StopReason model.StopReason `json:"stop_reason,omitempty"`
	Usage      *model.Usage     `json:"usage,omitempty"`

	// tool_calls: the calls exactly as the model sent them (message holds
	// them repaired for the provider)
	Calls []rawCall `json:"calls,omitempty"`

	// compaction
	Elided       int   `json:"elided,omitempty"`
	TokensBefore int64 `json:"estimated_tokens_before,omitempty"`
	TokensAfter  int64 `json:"estimated_tokens_after,omitempty"`

	// end
	Outcome   string          `json:"outcome,omitempty"` // "result" or "failure"
	Reason    string          `json:"reason,omitempty"`
	Detail    string          `json:"detail,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
	ToolCalls int             `json:"tool_calls,omitempty"`
	Repairs   int             `json:"repairs,omitempty"`
}

type rawCall struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Input string `json:"input"`
}

// transcriptWriter writes events; a write failure is logged once and the
// delegation goes on, since losing the transcript must not lose the work.
type transcriptWriter struct {
	w      io.Writer
	failed bool
}

func (t *transcriptWriter) write(e TranscriptEvent) {
	if t.w == nil || t.failed {
		return
	}
	b, err := json.Marshal(e)
	if err == nil {
		b = append(b, '\n')
		_, err = t.w.Write(b)
	}
	if err != nil {
		t.failed = true
		slog.Warn("writing the delegation transcript failed; the rest of it is lost", "event", e.Type, "err", err)
	}
}

func (t *transcriptWriter) start(r *runner) {
	t.write(TranscriptEvent{Type: "start", Role: r.spec.Role, Model: r.spec.Model, System: r.system, Tools: r.names})
}

func (t *transcriptWriter) message(turn int, m model.Message, u *model.Usage, stop model.StopReason) {
	t.write(TranscriptEvent{Type: "message", Turn: turn, Message: &m, Usage: u, StopReason: stop})
}

func (t *transcriptWriter) rawCalls(turn int, calls []model.ToolCall) {
	e := TranscriptEvent{Type: "tool_calls", Turn: turn}
	for _, c := range calls {
		e.Calls = append(e.Calls, rawCall{ID: c.ID, Name: c.Name, Input: string(c.Input)})
	}
	t.write(e)
}

func (t *transcriptWriter) compaction(turn, elided int, before, after int64) {
	t.write(TranscriptEvent{Type: "compaction", Turn: turn, Elided: elided, TokensBefore: before, TokensAfter: after})
}

func (t *transcriptWriter) end(res *Result, err error) {
	if res != nil {
		u := res.Usage
		t.write(TranscriptEvent{Type: "end", Turn: res.Turns, Outcome: "result", Output: res.Output,
			Usage: &u, ToolCalls: res.ToolCalls, Repairs: res.Repairs})
		return
	}
	e := TranscriptEvent{Type: "end", Outcome: "failure", Detail: err.Error()}
	var f *Failure
	if errors.As(err, &f) {
		u := f.Usage
		e.Turn, e.Reason, e.Detail, e.Usage = f.Turns, f.Reason, f.Detail, &u
	}
	t.write(e)
}
