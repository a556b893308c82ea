package report

import (
	"fmt"
	"sort"
	"time"

	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/plan"
)

// Colours by role and by step; the legend and the bars use the same table.
var roleColours = []struct{ Key, Colour string }{
	{loop.RoleResearcher, "#76b7b2"},
	{loop.RolePlanner, "#4e79a7"},
	{loop.RoleCritic, "#b07aa1"},
	{loop.RoleDesignSpec, "#ff9d9a"},
	{loop.RoleExecutor, "#f28e2b"},
	{loop.RoleCodeReviewer, "#edc948"},
	{loop.RoleVerifier, "#59a14f"},
	{string(loop.ActWorktree), "#bab0ac"},
	{string(loop.ActGates), "#9c755f"},
	{string(loop.ActMerge), "#17becf"},
	{string(loop.ActBaseline), "#8c8c8c"},
	{string(loop.ActFinalVerify), "#555555"},
	{string(loop.ActAsk), "#d4a6c8"},
}

func colourOf(b Bar) string {
	key := b.Role
	if key == "" {
		key = string(b.Type)
	}
	for _, c := range roleColours {
		if c.Key == key {
			return c.Colour
		}
	}
	return "#999999"
}

var statusColours = map[loop.TaskStatus]string{
	loop.TaskPending: "#eeeeee",
	loop.TaskRunning: "#cfe3f6",
	loop.TaskMerged:  "#cde8c5",
	loop.TaskFailed:  "#f6c6c4",
	loop.TaskSkipped: "#e4e4e4",
}

// Graph is the plan's dependency graph laid out in layers: a task sits one
// layer right of its deepest dependency.
type Graph struct {
	Width, Height int
	Nodes         []Node
	Edges         []Edge
}

// Node is a task box.
type Node struct {
	ID, Label, Title, Fill, Status string
	X, Y, W, H                     int
}

// Edge is a dependency, drawn from the dependency to the task.
type Edge struct {
	D string
}

const (
	nodeW, nodeH = 132, 34
	gapX, gapY   = 56, 12
	pad          = 10
)

func layoutGraph(p *plan.Plan, status map[string]loop.TaskStatus) *Graph {
	if p == nil || len(p.Tasks) == 0 {
		return nil
	}
	level := map[string]int{}
	byID := map[string]*plan.Task{}
	for i := range p.Tasks {
		byID[p.Tasks[i].ID] = &p.Tasks[i]
	}
	// Longest path from a root; a cycle (refused by plan validation) is cut
	// by the visiting mark rather than recursing forever.
	visiting := map[string]bool{}
	var depth func(id string) int
	depth = func(id string) int {
		if l, ok := level[id]; ok {
			return l
		}
		if visiting[id] {
			return 0
		}
		visiting[id] = true
		l := 0
		if t := byID[id]; t != nil {
			for _, d := range t.DependsOn {
				if _, ok := byID[d]; ok {
					l = max(l, depth(d)+1)
				}
			}
		}
		visiting[id] = false
		level[id] = l
		return l
	}
	var layers [][]string
	for _, t := range p.Tasks {
		l := depth(t.ID)
		for len(layers) <= l {
			layers = append(layers, nil)
		}
		layers[l] = append(layers[l], t.ID)
	}
	// Order each layer by the mean position of its dependencies (one
	// barycentre sweep), which removes most crossings in plan-shaped graphs.
	pos := map[string]float64{}
	for li, layer := range layers {
		if li > 0 {
			bary := map[string]float64{}
			for i, id := range layer {
				sum, n := 0.0, 0
				for _, d := range byID[id].DependsOn {
					if v, ok := pos[d]; ok {
						sum += v
						n++
					}
				}
				bary[id] = float64(i) / 1e6
				if n > 0 {
					bary[id] += sum / float64(n)
				}
			}
			sort.SliceStable(layer, func(a, b int) bool { return bary[layer[a]] < bary[layer[b]] })
		}
		for i, id := range layer {
			pos[id] = float64(i)
		}
	}
	g := &Graph{}
	tallest := 0
	for _, layer := range layers {
		tallest = max(tallest, len(layer))
	}
	g.Width = pad*2 + len(layers)*nodeW + (len(layers)-1)*gapX
	g.Height = pad*2 + tallest*nodeH + (tallest-1)*gapY
	at := map[string]Node{}
	for li, layer := range layers {
		// Centre short layers against the tallest one.
		offset := (tallest - len(layer)) * (nodeH + gapY) / 2
		for i, id := range layer {
			t := byID[id]
			st := status[id]
			if st == "" {
				st = loop.TaskPending
			}
			n := Node{ID: id, Label: clip(id, 18), Title: clip(t.Title, 20), Fill: statusColours[st], Status: string(st),
				X: pad + li*(nodeW+gapX), Y: pad + offset + i*(nodeH+gapY), W: nodeW, H: nodeH}
			at[id] = n
			g.Nodes = append(g.Nodes, n)
		}
	}
	for _, t := range p.Tasks {
		to := at[t.ID]
		for _, d := range t.DependsOn {
			from, ok := at[d]
			if !ok {
				continue
			}
			x1, y1 := from.X+from.W, from.Y+from.H/2
			x2, y2 := to.X, to.Y+to.H/2
			mid := (x1 + x2) / 2
			g.Edges = append(g.Edges, Edge{D: fmt.Sprintf("M%d %dC%d %d,%d %d,%d %d", x1, y1, mid, y1, mid, y2, x2-4, y2)})
		}
	}
	return g
}

// Gantt is the timeline: a row per task (and one per run-level step), a bar
// per action.
type Gantt struct {
	Width, Height int
	LabelW        int
	Rows          []GanttRow
	Ticks         []Tick
	Bars          []GanttBar
}

// GanttRow is a row's label.
type GanttRow struct {
	Label, Href string
	Y           int
}

// Tick is a time-axis mark.
type Tick struct {
	X     int
	Label string
}

// GanttBar is one action's rectangle.
type GanttBar struct {
	X, Y, W, H int
	Fill       string
	Class      string
	Title      string
}

const (
	rowH   = 16
	chartW = 960
	labelW = 120
	axisH  = 22
)

func layoutGantt(d *Data) *Gantt {
	type rowSpec struct {
		label, href string
		bars        []Bar
	}
	var rows []rowSpec
	// Run-level actions, one row per kind in the order they first appear.
	index := map[string]int{}
	for _, b := range d.RunBars {
		key := runRow(b)
		i, ok := index[key]
		if !ok {
			i = len(rows)
			index[key] = i
			rows = append(rows, rowSpec{label: key})
		}
		rows[i].bars = append(rows[i].bars, b)
	}
	for _, t := range d.Tasks {
		rows = append(rows, rowSpec{label: t.ID, href: "#task-" + t.ID, bars: t.Bars})
	}
	if len(rows) == 0 || !d.End.After(d.Start) {
		return nil
	}
	span := d.End.Sub(d.Start)
	x := func(t time.Time) int { return labelW + int(float64(chartW)*float64(t.Sub(d.Start))/float64(span)) }
	g := &Gantt{LabelW: labelW, Width: labelW + chartW + pad, Height: axisH + len(rows)*rowH + pad}
	for i, r := range rows {
		y := axisH + i*rowH
		g.Rows = append(g.Rows, GanttRow{Label: clip(r.label, 16), Href: r.href, Y: y + rowH - 4})
		for _, b := range r.bars {
			x1, x2 := x(b.Start), x(b.End)
			w := max(x2-x1, 2)
			class := b.Outcome
			if b.Open {
				class = "open"
			}
			title := fmt.Sprintf("%s · %s · %s", b.ActionID, who(b), b.End.Sub(b.Start).Round(time.Second))
			if b.Usage.Tokens > 0 {
				title += fmt.Sprintf(" · %d tokens · $%.4f", b.Usage.Tokens, b.Usage.CostUSD)
			}
			if b.Model != "" {
				title += " · " + b.Model
			}
			switch {
			case b.Open:
				title += " · no outcome journaled"
			case b.Outcome != "ok":
				title += " · " + b.Outcome
				if b.Detail != "" {
					title += ": " + clip(b.Detail, 160)
				}
			}
			g.Bars = append(g.Bars, GanttBar{X: x1, Y: y + 2, W: w, H: rowH - 4, Fill: colourOf(b), Class: class, Title: title})
		}
	}
	step := tickStep(span)
	for t := step; t < span; t += step {
		g.Ticks = append(g.Ticks, Tick{X: x(d.Start.Add(t)), Label: clock(t)})
	}
	return g
}

func runRow(b Bar) string {
	switch {
	case b.Type == loop.ActBaseline:
		return "baseline"
	case b.Type == loop.ActFinalVerify:
		return "final verify"
	case b.Type == loop.ActAsk:
		return "approval"
	case b.Role != "":
		return b.Role
	}
	return string(b.Type)
}

func who(b Bar) string {
	if b.Role != "" {
		return b.Role
	}
	return string(b.Type)
}

// tickStep picks a round interval giving at most about ten ticks.
func tickStep(span time.Duration) time.Duration {
	for _, s := range []time.Duration{
		time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute,
		5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 6 * time.Hour,
	} {
		if span/s <= 10 {
			return s
		}
	}
	return 24 * time.Hour
}

func clock(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%d:%02d", m, s)
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
