package agentrt

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sluice-run/sluice/internal/model"
)

// Compaction masks old tool observations: the content of every tool result
// but the most recent few is replaced by a one-line summary. Keeping only
// the last few observations in full beat full history in SWE-agent's
// ablations (arXiv 2405.15793), and masking matches LLM summarisation at
// half the cost (arXiv 2508.21433), so sluice masks rather than summarises.
// The system prompt (agent prompt and project instructions) and the
// delegation are never touched (seed 002 invariant 46).
const (
	// compactAt is the share of the context window at which compaction
	// starts.
	compactAt = 0.75
	// keepObservations is how many of the latest tool results stay whole.
	keepObservations = 3
	// bytesPerToken approximates tokens from bytes. English text and code
	// average close to 4 bytes per token with the BPE tokenizers of current
	// models; the estimate only decides when to compact, and the provider's
	// reported usage corrects it once a call has been made.
	bytesPerToken = 4
)

// estimateTokens is the approximate size of the next prompt: bytes/4 of the
// whole request, or, when larger, the size the provider reported for the
// last call plus bytes/4 of what was appended since.
func (r *runner) estimateTokens() int64 {
	n := 0
	for _, p := range r.system {
		n += len(p.Text)
	}
	for _, t := range r.specs {
		n += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	for _, m := range r.msgs {
		n += messageBytes(m)
	}
	est := int64(n / bytesPerToken)
	if r.reported > 0 {
		if rep := r.reported + int64(r.sinceReport/bytesPerToken); rep > est {
			est = rep
		}
	}
	return est
}

func messageBytes(m model.Message) int {
	n := 0
	for _, b := range m.Content {
		// A little for the block's framing, so that many tiny blocks are
		// not counted as free.
		n += len(b.Text) + len(b.Input) + len(b.ToolName) + len(b.ToolUseID) + 16
	}
	return n
}

// maybeCompact masks old observations when the estimated prompt passes
// compactAt of the context window: first all but the last keepObservations,
// then, if that is not enough, all but the last one.
func (r *runner) maybeCompact() {
	if r.spec.ContextWindow <= 0 {
		return
	}
	limit := int64(float64(r.spec.ContextWindow) * compactAt)
	before := r.estimateTokens()
	if before <= limit {
		return
	}
	elided := r.maskObservations(keepObservations)
	r.reported, r.sinceReport = 0, 0
	if r.estimateTokens() > limit {
		elided += r.maskObservations(1)
	}
	after := r.estimateTokens()
	r.tw.compaction(r.turns, elided, before, after)
}

// maskObservations replaces the content of every tool result except the
// last keep ones, and returns how many it masked.
func (r *runner) maskObservations(keep int) int {
	type loc struct{ m, b int }
	var obs []loc
	for mi, m := range r.msgs {
		for bi, b := range m.Content {
			if b.Type == model.BlockToolResult {
				obs = append(obs, loc{mi, bi})
			}
		}
	}
	masked := 0
	for i := 0; i < len(obs)-keep; i++ {
		b := &r.msgs[obs[i].m].Content[obs[i].b]
		if r.elided[b.ToolUseID] {
			continue
		}
		b.Text = r.summarise(*b)
		r.elided[b.ToolUseID] = true
		masked++
	}
	return masked
}

func (r *runner) summarise(b model.Block) string {
	ci := r.calls[b.ToolUseID]
	name := ci.name
	if name == "" {
		name = "a tool"
	}
	what := "output of " + name
	if b.IsError {
		what = "error from " + name
	}
	if ci.arg != "" {
		what += " " + ci.arg
	}
	lines := strings.Count(b.Text, "\n")
	if b.Text != "" && !strings.HasSuffix(b.Text, "\n") {
		lines++
	}
	return fmt.Sprintf("[%s elided: %d lines, %d bytes]", what, lines, len(b.Text))
}

// describeArgs picks the argument that best names what a call was about,
// for the summary line of a masked observation.
func describeArgs(input json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(input, &m) != nil {
		return ""
	}
	for _, k := range []string{"path", "file_path", "pattern", "command", "query", "url", "name"} {
		if s, ok := m[k].(string); ok && s != "" {
			s = strings.Join(strings.Fields(s), " ")
			if len(s) > 60 {
				s = s[:57] + "..."
			}
			return s
		}
	}
	return ""
}
