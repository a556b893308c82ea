package plan

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
)

// ErrInvalidGraph is wrapped by Waves and Stages when the dependencies do
// not form a DAG over existing tasks.
var ErrInvalidGraph = errors.New("plan dependencies are not a valid DAG")

// Waves groups the tasks into topological levels: wave 0 holds the tasks with
// no dependencies, wave n the tasks whose deepest dependency is in wave n-1.
// Ids are sorted within a wave. It fails on a dangling dependency, a
// self-dependency or a cycle; Validate describes those in full.
func Waves(p *Plan) ([][]string, error) {
	ids := map[string]bool{}
	for _, t := range p.Tasks {
		if t.ID == "" {
			return nil, fmt.Errorf("%w: a task has no id", ErrInvalidGraph)
		}
		if ids[t.ID] {
			return nil, fmt.Errorf("%w: duplicate task id %q", ErrInvalidGraph, t.ID)
		}
		ids[t.ID] = true
	}
	for _, t := range p.Tasks {
		for _, d := range t.DependsOn {
			if d == t.ID {
				return nil, fmt.Errorf("%w: task %q depends on itself", ErrInvalidGraph, t.ID)
			}
			if !ids[d] {
				return nil, fmt.Errorf("%w: task %q depends on %q, which does not exist", ErrInvalidGraph, t.ID, d)
			}
		}
	}
	if cyc := cycles(p); len(cyc) > 0 {
		return nil, fmt.Errorf("%w: dependency cycle %s", ErrInvalidGraph, strings.Join(cyc[0], " -> "))
	}

	_, deps := graph(p)
	level := map[string]int{}
	var depth func(id string) int
	depth = func(id string) int {
		if l, ok := level[id]; ok {
			return l
		}
		l := 0
		for _, d := range deps[id] {
			l = max(l, depth(d)+1)
		}
		level[id] = l
		return l
	}
	var waves [][]string
	for _, t := range p.Tasks {
		l := depth(t.ID)
		for len(waves) <= l {
			waves = append(waves, nil)
		}
		waves[l] = append(waves[l], t.ID)
	}
	for _, w := range waves {
		sort.Strings(w)
	}
	return waves, nil
}

// Stages refines Waves for barrier scheduling (seed 003): within a wave,
// tasks whose files_to_modify overlap cannot run side by side, so each wave
// is split into sequential stages, filled greedily in id order. Every stage
// is a set of tasks that may run in parallel.
func Stages(p *Plan) ([][]string, error) {
	waves, err := Waves(p)
	if err != nil {
		return nil, err
	}
	var stages [][]string
	for _, w := range waves {
		var local [][]string
		for _, id := range w {
			t, _ := p.Task(id)
			placed := false
			for i, st := range local {
				clash := false
				for _, other := range st {
					o, _ := p.Task(other)
					if len(Overlap(t, o)) > 0 {
						clash = true
						break
					}
				}
				if !clash {
					local[i] = append(local[i], id)
					placed = true
					break
				}
			}
			if !placed {
				local = append(local, []string{id})
			}
		}
		stages = append(stages, local...)
	}
	return stages, nil
}

// Overlap returns the paths that both tasks modify, cleaned and sorted. An
// entry names a file or a directory: "pkg/" (or "pkg") overlaps "pkg/a.go",
// and the more specific path is reported. "." is the whole repository.
func Overlap(a, b *Task) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range a.FilesToModify {
		cx := cleanRel(x)
		for _, y := range b.FilesToModify {
			cy := cleanRel(y)
			var hit string
			switch {
			case cx == cy:
				hit = cx
			case within(cx, cy):
				hit = cx
			case within(cy, cx):
				hit = cy
			default:
				continue
			}
			if !seen[hit] {
				seen[hit] = true
				out = append(out, hit)
			}
		}
	}
	sort.Strings(out)
	return out
}

func cleanRel(p string) string {
	return path.Clean(strings.ReplaceAll(p, `\`, "/"))
}

// within reports whether child lies strictly under dir.
func within(child, dir string) bool {
	if dir == "." {
		return child != "."
	}
	return strings.HasPrefix(child, dir+"/")
}

// CriticalPath returns the largest total cost along any dependency chain:
// the time a run takes with unlimited parallelism when cost is a task's
// duration. Dangling dependencies are ignored and a cycle is cut where it
// closes, so the result is defined for any plan.
func CriticalPath(p *Plan, cost func(*Task) float64) float64 {
	_, deps := graph(p)
	memo := map[string]float64{}
	active := map[string]bool{}
	var longest func(id string) float64
	longest = func(id string) float64 {
		if v, ok := memo[id]; ok {
			return v
		}
		if active[id] {
			return 0
		}
		active[id] = true
		best := 0.0
		for _, d := range deps[id] {
			best = max(best, longest(d))
		}
		active[id] = false
		t, _ := p.Task(id)
		v := best + cost(t)
		memo[id] = v
		return v
	}
	total := 0.0
	for _, t := range p.Tasks {
		if t.ID == "" {
			continue
		}
		total = max(total, longest(t.ID))
	}
	return total
}
