package live

import (
	"errors"
	"io"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/sluice-run/sluice/internal/loop"
)

// FrameInterval is the time between redraws: at most ten a second.
const FrameInterval = 100 * time.Millisecond

// DefaultStallAfter is how long a delegation may be silent before it is
// shown as stalled, unless Options say otherwise.
const DefaultStallAfter = 2 * time.Minute

// Options configure a live view.
type Options struct {
	// Out is the terminal drawn on; In is read for keys (nil: no keys).
	Out io.Writer
	In  io.Reader
	// Now is the clock (default time.Now).
	Now func() time.Time
	// StallAfter: see Frame.StallAfter. Zero means DefaultStallAfter; a
	// negative value turns stall detection off.
	StallAfter time.Duration
	// Interrupt is called once when the person presses ctrl+c (the
	// terminal is in raw mode, so no SIGINT arrives). It should cancel the
	// run; the view keeps drawing until Stop.
	Interrupt func()
	// Plain draws without colours.
	Plain bool
	// Width and Height, when set, are the screen size to draw for before
	// (or without) the terminal reporting one, as when Out is not a
	// terminal.
	Width, Height int
}

// View is the live view of a run on a terminal.
type View struct {
	sink *Sink
	opts Options

	mu      sync.Mutex
	prog    *tea.Program
	done    chan error
	stopped bool
	err     error
}

// New returns a view; nothing is drawn until Start.
func New(opts Options) *View {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	switch {
	case opts.StallAfter == 0:
		opts.StallAfter = DefaultStallAfter
	case opts.StallAfter < 0:
		opts.StallAfter = 0
	}
	return &View{sink: NewSink(opts.Now), opts: opts}
}

// Entry records a journal entry and the state after it; use it as the
// engine's Observe hook. It never blocks on the terminal.
func (v *View) Entry(e loop.Entry, s loop.State) { v.sink.Entry(e, s) }

// Activity records progress inside a delegation. It never blocks on the
// terminal.
func (v *View) Activity(a Activity) { v.sink.Activity(a) }

// Sink is where the view's news is kept.
func (v *View) Sink() *Sink { return v.sink }

// Start begins drawing on Options.Out until Stop.
func (v *View) Start() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.prog != nil {
		return
	}
	opts := []tea.ProgramOption{
		tea.WithOutput(v.opts.Out),
		tea.WithInput(v.opts.In),
		tea.WithFPS(int(time.Second / FrameInterval)),
		// The process's own SIGINT handling stays in charge of the run.
		tea.WithoutSignalHandler(),
	}
	if v.opts.Width > 0 && v.opts.Height > 0 {
		opts = append(opts, tea.WithWindowSize(v.opts.Width, v.opts.Height))
	}
	v.prog = tea.NewProgram(newModel(v.sink, v.opts), opts...)
	v.done = make(chan error, 1)
	go func(p *tea.Program, done chan<- error) {
		_, err := p.Run()
		done <- err
	}(v.prog, v.done)
}

// Stop draws the final frame, restores the terminal and waits for the view
// to end. Calling it again returns the first call's result.
func (v *View) Stop() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.prog == nil || v.stopped {
		return v.err
	}
	v.stopped = true
	v.prog.Send(stopMsg{})
	err := <-v.done
	if errors.Is(err, tea.ErrProgramKilled) {
		err = nil
	}
	v.err = err
	return err
}

// Note shows a one-line message (a warning, the model in use) under the
// table; the view keeps the latest few. It never blocks on the terminal.
func (v *View) Note(msg string) { v.sink.Note(msg) }

// Hold gives the terminal back while fn runs (a question for the person)
// and takes it again afterwards.
func (v *View) Hold(fn func()) {
	v.mu.Lock()
	p := v.prog
	v.mu.Unlock()
	if p == nil {
		fn()
		return
	}
	_ = p.ReleaseTerminal()
	defer func() { _ = p.RestoreTerminal() }()
	fn()
}

type tickMsg time.Time

type stopMsg struct{}

// model is the bubbletea model. It draws from sink snapshots taken on a
// timer, so the frame rate is bounded however fast entries arrive.
type model struct {
	sink          *Sink
	opts          Options
	width, height int
	snap          Snapshot
	frame         string
	interrupted   bool
	stopping      bool
}

func newModel(sink *Sink, opts Options) *model {
	m := &model{sink: sink, opts: opts}
	m.refresh()
	return m
}

func tick() tea.Cmd {
	return tea.Tick(FrameInterval, func(t time.Time) tea.Msg { return tickMsg(t) })
}

func (m *model) Init() tea.Cmd { return tick() }

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tickMsg:
		m.refresh()
		return m, tick()
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.redraw()
	case tea.KeyPressMsg:
		if msg.String() == "ctrl+c" && !m.interrupted {
			m.interrupted = true
			if m.opts.Interrupt != nil {
				m.opts.Interrupt()
			}
		}
	case stopMsg:
		m.stopping = true
		m.refresh()
		return m, tea.Quit
	}
	return m, nil
}

// refresh takes a new snapshot when the sink changed and redraws.
func (m *model) refresh() {
	if v := m.sink.Version(); v != m.snap.Version || m.frame == "" || !m.snap.Seen {
		m.snap = m.sink.Snapshot()
	}
	m.redraw()
}

func (m *model) redraw() {
	m.frame = Render(m.snap, Frame{Now: m.opts.Now(), Width: m.width, Height: m.height, StallAfter: m.opts.StallAfter, Plain: m.opts.Plain})
	if m.interrupted && !m.stopping {
		m.frame += "interrupting: the run stops after journaling what is in flight…\n"
	}
}

func (m *model) View() tea.View { return tea.NewView(m.frame) }
