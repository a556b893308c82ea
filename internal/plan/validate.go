package plan

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// Estimated efforts a task may declare.
const (
	EffortSmall  = "small"
	EffortMedium = "medium"
	EffortLarge  = "large"
)

// Problem is one thing wrong with a plan's meaning. TaskID is empty for
// problems of the plan as a whole.
type Problem struct {
	TaskID  string
	Field   string
	Message string
}

func (p Problem) Error() string {
	var b strings.Builder
	if p.TaskID != "" {
		fmt.Fprintf(&b, "task %q: ", p.TaskID)
	} else {
		b.WriteString("plan: ")
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Validate reports every problem with a plan in one pass, in a stable order:
// plan-level problems, then each task's own problems in plan order, then
// dependency cycles.
func Validate(p *Plan) []Problem {
	var probs []Problem
	add := func(id, field, format string, args ...any) {
		probs = append(probs, Problem{TaskID: id, Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if len(p.Tasks) == 0 {
		add("", "tasks", "the plan has no tasks; a plan needs at least one")
		return probs
	}

	ids := map[string]int{} // id -> index of first task with it
	for i, t := range p.Tasks {
		if strings.TrimSpace(t.ID) == "" {
			continue
		}
		if _, dup := ids[t.ID]; !dup {
			ids[t.ID] = i
		}
	}

	seenDup := map[string]bool{}
	for i, t := range p.Tasks {
		id := t.ID
		if strings.TrimSpace(id) == "" {
			add("", "id", "task %d (%q) has no id; give every task a unique id", i+1, t.Title)
			id = fmt.Sprintf("#%d", i+1)
		} else if first := ids[id]; first != i && !seenDup[id] {
			seenDup[id] = true
			add(id, "id", "duplicate id: tasks %d and %d are both %q; ids must be unique", first+1, i+1, id)
		}

		deps := map[string]bool{}
		for _, d := range t.DependsOn {
			switch {
			case d == t.ID && t.ID != "":
				add(id, "depends_on", "the task depends on itself")
			case deps[d]:
				add(id, "depends_on", "%q is listed more than once", d)
			default:
				if _, ok := ids[d]; !ok {
					add(id, "depends_on", "%q does not exist", d)
				}
			}
			deps[d] = true
		}

		criteria := 0
		for j, c := range t.AcceptanceCriteria {
			if strings.TrimSpace(c) == "" {
				add(id, "acceptance_criteria", "criterion %d is empty", j+1)
				continue
			}
			criteria++
		}
		if criteria == 0 && len(t.AcceptanceCriteria) == 0 {
			add(id, "acceptance_criteria", "the task has no acceptance criteria; give it at least one checkable criterion")
		}

		for _, f := range t.FilesToModify {
			if msg := checkRepoPath(f); msg != "" {
				add(id, "files_to_modify", "%q %s", f, msg)
			}
		}
		for _, f := range t.FilesToRead {
			if msg := checkRepoPath(f); msg != "" {
				add(id, "files_to_read", "%q %s", f, msg)
			}
		}

		switch t.ReviewDepth {
		case "", DepthLightweight, DepthStandard, DepthFull:
		default:
			add(id, "review_depth", "%q is not a review depth; use lightweight, standard or full", t.ReviewDepth)
		}
		switch t.EstimatedEffort {
		case "", EffortSmall, EffortMedium, EffortLarge:
		default:
			add(id, "estimated_effort", "%q is not an effort; use small, medium or large", t.EstimatedEffort)
		}
	}

	for _, cyc := range cycles(p) {
		add(cyc[0], "depends_on", "dependency cycle: %s", strings.Join(cyc, " -> "))
	}
	return probs
}

// checkRepoPath says what is wrong with a path a task names, or "".
func checkRepoPath(f string) string {
	if strings.TrimSpace(f) == "" {
		return "is empty"
	}
	if path.IsAbs(f) || filepath.IsAbs(f) || strings.HasPrefix(f, `\`) || (len(f) > 1 && f[1] == ':') {
		return "is absolute; name files relative to the repository root"
	}
	c := path.Clean(strings.ReplaceAll(f, `\`, "/"))
	if c == ".." || strings.HasPrefix(c, "../") {
		return "escapes the repository; name files inside it"
	}
	first, _, _ := strings.Cut(c, "/")
	if first == ".git" || first == ".sluice" {
		return fmt.Sprintf("is inside %s/, which tasks may not touch", first)
	}
	return ""
}

// graph returns, for the tasks with unique non-empty ids, the dependencies
// that exist, in plan order. Self-dependencies are left out: Validate reports
// them on their own.
func graph(p *Plan) (order []string, deps map[string][]string) {
	deps = map[string][]string{}
	for _, t := range p.Tasks {
		if t.ID == "" {
			continue
		}
		if _, dup := deps[t.ID]; dup {
			continue
		}
		deps[t.ID] = nil
		order = append(order, t.ID)
	}
	for _, t := range p.Tasks {
		ds, ok := deps[t.ID]
		if !ok || ds != nil {
			continue
		}
		seen := map[string]bool{}
		out := []string{}
		for _, d := range t.DependsOn {
			if _, exists := deps[d]; !exists || d == t.ID || seen[d] {
				continue
			}
			seen[d] = true
			out = append(out, d)
		}
		deps[t.ID] = out
	}
	return order, deps
}

// cycles finds one cycle in every strongly connected component of the
// dependency graph that has more than one task. Each cycle starts and ends
// at the component's first task in plan order, so reports are stable.
func cycles(p *Plan) [][]string {
	order, deps := graph(p)
	pos := map[string]int{}
	for i, id := range order {
		pos[id] = i
	}

	// Tarjan's algorithm, iterative over plan order for determinism.
	index := map[string]int{}
	low := map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var sccs [][]string
	next := 0
	var strong func(v string)
	strong = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range deps[v] {
			if _, seen := index[w]; !seen {
				strong(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var comp []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			if len(comp) > 1 {
				sccs = append(sccs, comp)
			}
		}
	}
	for _, v := range order {
		if _, seen := index[v]; !seen {
			strong(v)
		}
	}

	var out [][]string
	for _, comp := range sccs {
		in := map[string]bool{}
		start := comp[0]
		for _, v := range comp {
			in[v] = true
			if pos[v] < pos[start] {
				start = v
			}
		}
		out = append(out, cyclePath(start, deps, in))
	}
	// Order reports by where each cycle starts in the plan.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && pos[out[j][0]] < pos[out[j-1][0]]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// cyclePath finds a path start -> ... -> start inside one strongly connected
// component, following dependencies in their listed order (a BFS, so the
// cycle named is a shortest one).
func cyclePath(start string, deps map[string][]string, in map[string]bool) []string {
	prev := map[string]string{}
	queue := []string{start}
	visited := map[string]bool{start: true}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range deps[v] {
			if !in[w] {
				continue
			}
			if w == start {
				path := []string{start}
				for x := v; x != start; x = prev[x] {
					path = append(path, x)
				}
				// path is start, v, prev[v], ...; reverse all but the head.
				rev := []string{start}
				for i := len(path) - 1; i >= 1; i-- {
					rev = append(rev, path[i])
				}
				return append(rev, start)
			}
			if !visited[w] {
				visited[w] = true
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return []string{start, start}
}
