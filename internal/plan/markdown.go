package plan

import (
	"bytes"
	"fmt"
	"strings"
)

// RenderMarkdown renders plan.md, the plan as a person reads it: the goal,
// the waves, every task with its dependencies, files and criteria, the
// pre-mortem and the critique history. It renders any plan, valid or not;
// the waves section is left out when the dependencies are not a DAG.
func RenderMarkdown(p *Plan) []byte {
	var b bytes.Buffer
	b.WriteString("# Plan\n\n")
	b.WriteString("**Goal:** ")
	b.WriteString(inline(p.Goal))
	b.WriteString("\n\n")

	waves, err := Waves(p)
	switch {
	case len(p.Tasks) == 0:
		b.WriteString("The plan has no tasks.\n")
	case err != nil:
		fmt.Fprintf(&b, "%s. The dependencies do not form a DAG, so there is no execution order: %v.\n", count(len(p.Tasks), "task"), err)
	default:
		fmt.Fprintf(&b, "%s in %s.\n\n", count(len(p.Tasks), "task"), count(len(waves), "wave"))
		b.WriteString("| Wave | Tasks |\n|---|---|\n")
		for i, w := range waves {
			fmt.Fprintf(&b, "| %d | %s |\n", i+1, strings.Join(w, ", "))
		}
	}

	if len(p.Tasks) > 0 {
		b.WriteString("\n## Tasks\n")
	}
	for _, t := range p.Tasks {
		title := inline(t.Title)
		if title == "" {
			title = "(untitled)"
		}
		fmt.Fprintf(&b, "\n### %s: %s\n\n", code(t.ID), title)
		if d := strings.TrimSpace(t.Description); d != "" {
			b.WriteString(d)
			b.WriteString("\n\n")
		}
		deps := "none"
		if len(t.DependsOn) > 0 {
			deps = codes(t.DependsOn)
		}
		fmt.Fprintf(&b, "- Depends on: %s\n", deps)
		if t.EstimatedEffort != "" {
			fmt.Fprintf(&b, "- Effort: %s\n", inline(t.EstimatedEffort))
		}
		if t.ReviewDepth != "" {
			fmt.Fprintf(&b, "- Review depth: %s\n", inline(t.ReviewDepth))
		}
		if len(t.FilesToModify) > 0 {
			fmt.Fprintf(&b, "- Modifies: %s\n", codes(t.FilesToModify))
		}
		if len(t.FilesToRead) > 0 {
			fmt.Fprintf(&b, "- Reads: %s\n", codes(t.FilesToRead))
		}

		b.WriteString("\nAcceptance criteria:\n\n")
		if len(t.AcceptanceCriteria) == 0 {
			b.WriteString("- (none)\n")
		}
		for _, c := range t.AcceptanceCriteria {
			fmt.Fprintf(&b, "- [ ] %s\n", item(c))
		}
		sa := t.SpecificationAdherence
		if len(sa.RequiredPatterns)+len(sa.ForbiddenPatterns)+len(sa.TechChoices) > 0 {
			b.WriteString("\nSpecification adherence:\n\n")
			for _, s := range sa.RequiredPatterns {
				fmt.Fprintf(&b, "- Required: %s\n", item(s))
			}
			for _, s := range sa.ForbiddenPatterns {
				fmt.Fprintf(&b, "- Forbidden: %s\n", item(s))
			}
			for _, s := range sa.TechChoices {
				fmt.Fprintf(&b, "- Tech choice: %s\n", item(s))
			}
		}
		if len(t.FailureModes) > 0 {
			b.WriteString("\nFailure modes:\n\n")
			for _, s := range t.FailureModes {
				fmt.Fprintf(&b, "- %s\n", item(s))
			}
		}
	}

	if len(p.PreMortem) > 0 {
		b.WriteString("\n## Pre-mortem\n\n")
		for _, s := range p.PreMortem {
			fmt.Fprintf(&b, "- %s\n", item(s))
		}
	}
	if len(p.CritiqueHistory) > 0 {
		b.WriteString("\n## Critique history\n")
		for _, c := range p.CritiqueHistory {
			fmt.Fprintf(&b, "\n### Iteration %d: %s\n\n", c.Iteration, inline(c.Verdict))
			if c.Category != "" || c.Severity != "" {
				var parts []string
				if c.Category != "" {
					parts = append(parts, "category "+inline(c.Category))
				}
				if c.Severity != "" {
					parts = append(parts, "severity "+inline(c.Severity))
				}
				fmt.Fprintf(&b, "- %s\n", strings.Join(parts, ", "))
			}
			if c.Objection != "" {
				fmt.Fprintf(&b, "- Objection: %s\n", item(c.Objection))
			}
			if c.SuggestedFix != "" {
				fmt.Fprintf(&b, "- Suggested fix: %s\n", item(c.SuggestedFix))
			}
			if c.Objection != "" {
				state := "open"
				if c.Resolved {
					state = "resolved"
				}
				fmt.Fprintf(&b, "- Status: %s\n", state)
			}
		}
	}
	return b.Bytes()
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// inline flattens text onto one line, for headings and table cells.
func inline(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// item renders possibly multi-line text as the body of a list item: later
// lines are indented so they stay inside the item.
func item(s string) string {
	s = strings.TrimSpace(s)
	return strings.ReplaceAll(s, "\n", "\n  ")
}

// code renders s as an inline code span, widening the fence when s holds
// backticks.
func code(s string) string {
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || s == "" {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

func codes(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = code(s)
	}
	return strings.Join(out, ", ")
}
