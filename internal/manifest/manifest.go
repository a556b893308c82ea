// Package manifest parses language manifests (seed 000): Markdown files that
// map the five abstract roles to plugin agents or skills, name the quality
// gate commands, and may override the process flow. It also carries the
// built-in manifests for the languages sluice detects.
package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// Roles are the five abstract roles a manifest fills, in display order.
var roleNames = []string{"architect", "test-designer", "code-reviewer", "design-spec", "linting"}

// Gates are the five quality gates, in display order.
var gateNames = []string{"format", "lint", "typecheck", "test", "standards"}

// RoleNames returns the five abstract roles.
func RoleNames() []string { return slices.Clone(roleNames) }

// GateNames returns the five quality gates.
func GateNames() []string { return slices.Clone(gateNames) }

// Section titles, lower-cased.
const (
	SectionRoles       = "role fulfillment"
	SectionGates       = "quality gates"
	SectionDetection   = "project detection"
	SectionConventions = "conventions"
	SectionFlow        = "process flow override"
)

var sectionTitles = []string{SectionRoles, SectionGates, SectionDetection, SectionConventions, SectionFlow}

// GeneralPurpose is the reference meaning "no specialist".
const GeneralPurpose = "general-purpose"

// Warning is a problem in a manifest that does not stop resolution.
type Warning struct {
	Message string
	File    string
	Line    int
}

// ErrMalformed is matched by every *ParseError.
var ErrMalformed = errors.New("malformed language manifest")

// ParseError says why a manifest cannot be used at all. Resolution then falls
// back to general-purpose for every role.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Is makes errors.Is(err, ErrMalformed) true.
func (e *ParseError) Is(target error) bool { return target == ErrMalformed }

// Entry is one key/value line of a section: a bullet item or a table row.
type Entry struct {
	Key   string   `json:"key"`
	Value string   `json:"value"`
	Code  []string `json:"code,omitempty"` // the value's code spans, in order
	Line  int      `json:"line"`
}

// RoleRef is a role's declared reference as written: "@plugin:agent",
// "/plugin:skill" or "general-purpose".
type RoleRef struct {
	Ref  string
	Line int
}

// Gate is a quality-gate command. Command "" means the manifest says the
// gate is not set.
type Gate struct {
	Command      string
	Alternatives []string
	Line         int
}

// Flow is a declared process-flow override.
type Flow struct {
	// Ref is the flow file the section points at (a link or a code span
	// ending in .md), relative to the manifest; "" when the flow is
	// described inline.
	Ref  string
	Text string
	Line int
}

// Manifest is a parsed language manifest.
type Manifest struct {
	Path string
	// Roles holds every declared role. An omitted role and one declared
	// "(none ...)" are both absent.
	Roles map[string]RoleRef
	// Gates holds every gate the Quality Gates section names; Command is ""
	// for "(none ...)".
	Gates map[string]Gate
	// HasGates reports whether a Quality Gates section exists; without one,
	// gates are inferred.
	HasGates    bool
	Detection   []Entry
	Conventions []Entry
	// Flow is nil when no override is declared.
	Flow *Flow
	// Sections lists the recognised sections present, in document order.
	Sections []string
	Warnings []Warning
}

var md = goldmark.New(goldmark.WithExtensions(extension.Table))

// Parse parses a manifest; path names it in warnings and errors. It returns
// a *ParseError (matching ErrMalformed) when the content cannot serve as a
// manifest: not UTF-8 text, or no Role Fulfillment section.
func Parse(path string, src []byte) (*Manifest, error) {
	if !utf8.Valid(src) || bytes.IndexByte(src, 0) >= 0 {
		return nil, &ParseError{File: path, Msg: "not a UTF-8 Markdown text file; write the manifest as Markdown"}
	}
	p := parser{path: path, src: src, lines: lineStarts(src)}
	doc := md.Parser().Parse(text.NewReader(src))
	m := &Manifest{Path: path, Roles: map[string]RoleRef{}, Gates: map[string]Gate{}}

	sections := p.split(doc)
	for _, s := range sections {
		m.Sections = append(m.Sections, s.title)
	}
	if i := slices.IndexFunc(sections, func(s section) bool { return s.title == SectionRoles }); i < 0 {
		return nil, &ParseError{File: path, Line: 1, Msg: "missing section \"Role Fulfillment\"; add a \"## Role Fulfillment\" heading with one \"- role: @plugin:agent\" line per role"}
	}
	seen := map[string]bool{}
	for _, s := range sections {
		if seen[s.title] {
			p.warn(s.line, fmt.Sprintf("section %q appears more than once; only the first is used", s.heading))
			continue
		}
		seen[s.title] = true
		switch s.title {
		case SectionRoles:
			p.roles(s, m)
		case SectionGates:
			m.HasGates = true
			p.gates(s, m)
		case SectionDetection:
			m.Detection = p.entries(s)
		case SectionConventions:
			m.Conventions = p.entries(s)
		case SectionFlow:
			m.Flow = p.flow(s)
		}
	}
	if !m.HasGates {
		p.warn(0, "no \"Quality Gates\" section; gates are inferred from the project's file types")
	}
	sort.SliceStable(p.warnings, func(i, j int) bool { return p.warnings[i].Line < p.warnings[j].Line })
	m.Warnings = p.warnings
	return m, nil
}

type parser struct {
	path     string
	src      []byte
	lines    []int
	warnings []Warning
}

func (p *parser) warn(line int, msg string) {
	p.warnings = append(p.warnings, Warning{Message: msg, File: p.path, Line: line})
}

func lineStarts(src []byte) []int {
	starts := []int{0}
	for i, c := range src {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// line converts a byte offset to a 1-based line number.
func (p *parser) line(off int) int {
	if off < 0 {
		return 0
	}
	return sort.Search(len(p.lines), func(i int) bool { return p.lines[i] > off })
}

// section is a recognised heading and the blocks under it, up to the next
// heading of the same or a higher level.
type section struct {
	title   string // canonical, lower-cased
	heading string // as written
	line    int
	blocks  []ast.Node
}

func (p *parser) split(doc ast.Node) []section {
	var out []section
	cur := -1
	level := 0
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		if h, ok := n.(*ast.Heading); ok {
			title := sectionTitle(p.plain(h))
			if cur >= 0 && h.Level > level && title == "" {
				// A sub-heading stays inside the section.
				out[cur].blocks = append(out[cur].blocks, n)
				continue
			}
			cur = -1
			if title != "" {
				out = append(out, section{title: title, heading: strings.TrimSpace(p.plain(h)), line: p.line(p.offset(h))})
				cur = len(out) - 1
				level = h.Level
			}
			continue
		}
		if cur >= 0 {
			out[cur].blocks = append(out[cur].blocks, n)
		}
	}
	return out
}

// sectionTitle maps a heading to a canonical section title, or "". It
// tolerates numbering ("3. Quality Gates"), case and a trailing colon.
func sectionTitle(h string) string {
	h = strings.ToLower(strings.Join(strings.Fields(h), " "))
	h = strings.TrimLeft(h, "0123456789.)§ ")
	h = strings.TrimRight(h, ": ")
	for _, t := range sectionTitles {
		if h == t || strings.HasPrefix(h, t+" (") {
			return t
		}
	}
	return ""
}

// piece is a run of inline text; code pieces came from code spans.
type piece struct {
	s    string
	code bool
	off  int
	link string // destination, for links
}

// pieces flattens n's inline content in document order.
func (p *parser) pieces(n ast.Node) []piece {
	var out []piece
	var walk func(n ast.Node)
	walk = func(n ast.Node) {
		switch v := n.(type) {
		case *ast.Text:
			s := string(v.Value(p.src))
			if v.SoftLineBreak() || v.HardLineBreak() {
				s += " "
			}
			out = append(out, piece{s: s, off: v.Segment.Start})
			return
		case *ast.String:
			out = append(out, piece{s: string(v.Value), off: -1})
			return
		case *ast.CodeSpan:
			var b strings.Builder
			off := -1
			for c := v.FirstChild(); c != nil; c = c.NextSibling() {
				switch t := c.(type) {
				case *ast.Text:
					if off < 0 {
						off = t.Segment.Start
					}
					b.Write(t.Value(p.src))
				case *ast.String:
					b.Write(t.Value)
				}
			}
			out = append(out, piece{s: strings.TrimSpace(b.String()), code: true, off: off})
			return
		case *ast.AutoLink:
			out = append(out, piece{s: string(v.URL(p.src)), off: -1, link: string(v.URL(p.src))})
			return
		case *ast.Link:
			out = append(out, piece{off: firstTextOffset(v), link: string(v.Destination)})
		case *ast.RawHTML, *ast.HTMLBlock:
			return
		}
		if n.Type() == ast.TypeBlock && n.Lines() != nil && n.Lines().Len() > 0 && n.FirstChild() == nil {
			// Code blocks and other leaf blocks: keep their raw text.
			var b strings.Builder
			for i := range n.Lines().Len() {
				seg := n.Lines().At(i)
				b.Write(seg.Value(p.src))
			}
			out = append(out, piece{s: b.String(), off: n.Lines().At(0).Start})
			return
		}
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			walk(c)
			if c.Type() == ast.TypeBlock {
				out = append(out, piece{s: " ", off: -1})
			}
		}
	}
	walk(n)
	return out
}

func (p *parser) plain(n ast.Node) string {
	var b strings.Builder
	for _, pc := range p.pieces(n) {
		b.WriteString(pc.s)
	}
	return b.String()
}

// firstTextOffset is the source position of the first text under n, or -1.
func firstTextOffset(n ast.Node) int {
	if t, ok := n.(*ast.Text); ok {
		return t.Segment.Start
	}
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if off := firstTextOffset(c); off >= 0 {
			return off
		}
	}
	return -1
}

// offset is the first source position inside n, or -1.
func (p *parser) offset(n ast.Node) int {
	if n.Type() == ast.TypeBlock && n.Lines() != nil && n.Lines().Len() > 0 {
		return n.Lines().At(0).Start
	}
	for _, pc := range p.pieces(n) {
		if pc.off >= 0 {
			return pc.off
		}
	}
	if n.Pos() >= 0 {
		return n.Pos()
	}
	return -1
}

// entries reads the key/value entries of a section: top-level bullet items
// ("- key: value") and the rows of two-column tables (| key | value |).
func (p *parser) entries(s section) []Entry {
	var out []Entry
	for _, b := range s.blocks {
		switch v := b.(type) {
		case *ast.List:
			for it := v.FirstChild(); it != nil; it = it.NextSibling() {
				line := p.line(p.offset(it))
				key, val, ok := splitEntry(p.pieces(it))
				if !ok {
					p.warn(line, fmt.Sprintf("%s: entry %q has no \"key: value\" form; write it as \"- key: value\"", s.heading, strings.TrimSpace(p.plain(it))))
					continue
				}
				out = append(out, entryOf(key, val, line))
			}
		case *east.Table:
			for row := v.FirstChild(); row != nil; row = row.NextSibling() {
				if _, ok := row.(*east.TableHeader); ok {
					continue
				}
				var cells [][]piece
				for c := row.FirstChild(); c != nil; c = c.NextSibling() {
					cells = append(cells, p.pieces(c))
				}
				line := p.line(p.offset(row))
				if len(cells) < 2 {
					p.warn(line, fmt.Sprintf("%s: table row has %d column(s); use two columns, | key | value |", s.heading, len(cells)))
					continue
				}
				out = append(out, entryOf(cells[0], cells[1], line))
			}
		}
	}
	return out
}

func entryOf(key, val []piece, line int) Entry {
	e := Entry{Key: normKey(join(key)), Value: strings.TrimSpace(join(val)), Line: line}
	for _, pc := range val {
		if pc.code && pc.s != "" {
			e.Code = append(e.Code, pc.s)
		}
	}
	return e
}

func join(ps []piece) string {
	var b strings.Builder
	for _, pc := range ps {
		b.WriteString(pc.s)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// separators between a bullet's key and its value, outside code spans.
var separators = []string{":", " — ", " – ", " -> ", " → ", " = "}

// splitEntry splits a bullet's pieces at the first separator outside a code
// span.
func splitEntry(ps []piece) (key, val []piece, ok bool) {
	for i, pc := range ps {
		if pc.code {
			continue
		}
		best, sepLen := -1, 0
		for _, sep := range separators {
			if j := strings.Index(pc.s, sep); j >= 0 && (best < 0 || j < best) {
				best, sepLen = j, len(sep)
			}
		}
		if best < 0 {
			continue
		}
		key = append(slices.Clone(ps[:i]), piece{s: pc.s[:best], off: pc.off})
		val = append([]piece{{s: pc.s[best+sepLen:], off: pc.off}}, ps[i+1:]...)
		return key, val, strings.TrimSpace(join(key)) != ""
	}
	return nil, nil, false
}

// normKey lower-cases a key and joins its words with hyphens.
func normKey(s string) string {
	s = strings.ToLower(strings.Trim(strings.TrimSpace(s), "*_`"))
	s = strings.NewReplacer("_", " ", "-", " ").Replace(s)
	return strings.Join(strings.Fields(s), "-")
}

// isNone reports whether a value is "(none ...)": explicitly not set.
func isNone(v string) bool {
	v = strings.ToLower(strings.TrimSpace(v))
	return strings.HasPrefix(v, "(none") || v == "none" || v == "-" || v == "—" || v == ""
}

var gateAliases = map[string]string{
	"format": "format", "formatting": "format", "formatter": "format", "fmt": "format",
	"lint": "lint", "linting": "lint", "linter": "lint",
	"typecheck": "typecheck", "type-check": "typecheck", "type-checking": "typecheck", "types": "typecheck", "typechecking": "typecheck",
	"test": "test", "tests": "test", "testing": "test",
	"standards": "standards", "standard": "standards",
}

func (p *parser) roles(s section, m *Manifest) {
	entries := p.entries(s)
	if len(entries) == 0 && strings.TrimSpace(p.sectionText(s)) != "" && !isNone(p.sectionText(s)) {
		p.warn(s.line, "Role Fulfillment has no entries; write one \"- role: @plugin:agent\" line per role (every role uses general-purpose)")
	}
	for _, e := range entries {
		role := e.Key
		if !slices.Contains(roleNames, role) {
			p.warn(e.Line, fmt.Sprintf("unknown role %q; the roles are %s", e.Key, strings.Join(roleNames, ", ")))
			continue
		}
		if prev, dup := m.Roles[role]; dup {
			p.warn(e.Line, fmt.Sprintf("role %s declared again; keeping the declaration on line %d", role, prev.Line))
			continue
		}
		if isNone(e.Value) {
			continue
		}
		ref, ok := findRef(e)
		if !ok {
			p.warn(e.Line, fmt.Sprintf("role %s: %q is not an @plugin:agent or /plugin:skill reference (nor general-purpose); the role uses general-purpose", role, e.Value))
			continue
		}
		m.Roles[role] = RoleRef{Ref: ref, Line: e.Line}
	}
}

// findRef returns the first reference in an entry's value: code spans first,
// then bare words.
func findRef(e Entry) (string, bool) {
	cands := slices.Clone(e.Code)
	cands = append(cands, strings.FieldsFunc(e.Value, func(r rune) bool {
		return r == ' ' || r == ',' || r == '`' || r == '(' || r == ')' || r == ';'
	})...)
	for _, c := range cands {
		c = strings.TrimRight(c, ".")
		if strings.EqualFold(c, GeneralPurpose) {
			return GeneralPurpose, true
		}
		if _, _, _, err := ParseRef(c); err == nil {
			return c, true
		}
	}
	return "", false
}

// Reference kinds.
const (
	KindAgent = "agent"
	KindSkill = "skill"
)

// ParseRef splits "@plugin:agent" or "/plugin:skill" into its kind, plugin
// and name. Names are single path components: letters, digits, ".", "_"
// and "-".
func ParseRef(ref string) (kind, plugin, name string, err error) {
	switch {
	case strings.HasPrefix(ref, "@"):
		kind = KindAgent
	case strings.HasPrefix(ref, "/"):
		kind = KindSkill
	default:
		return "", "", "", fmt.Errorf("reference %q: want @plugin:agent or /plugin:skill", ref)
	}
	plugin, name, ok := strings.Cut(ref[1:], ":")
	if !ok || !validName(plugin) || !validName(name) {
		return "", "", "", fmt.Errorf("reference %q: want %splugin:name with plugin and name made of letters, digits, '.', '_' and '-'", ref, ref[:1])
	}
	return kind, plugin, name, nil
}

func validName(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func (p *parser) gates(s section, m *Manifest) {
	for _, e := range p.entries(s) {
		gate, ok := gateAliases[e.Key]
		if !ok {
			p.warn(e.Line, fmt.Sprintf("unknown quality gate %q; the gates are %s", e.Key, strings.Join(gateNames, ", ")))
			continue
		}
		if prev, dup := m.Gates[gate]; dup {
			p.warn(e.Line, fmt.Sprintf("gate %s declared again; keeping the declaration on line %d", gate, prev.Line))
			continue
		}
		g := Gate{Line: e.Line, Alternatives: []string{}}
		switch {
		case len(e.Code) > 0:
			g.Command = e.Code[0]
			g.Alternatives = append(g.Alternatives, e.Code[1:]...)
		case isNone(e.Value):
		default:
			g.Command = e.Value
		}
		m.Gates[gate] = g
	}
}

func (p *parser) sectionText(s section) string {
	var b strings.Builder
	for _, n := range s.blocks {
		b.WriteString(p.plain(n))
		b.WriteString(" ")
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

func (p *parser) flow(s section) *Flow {
	txt := p.sectionText(s)
	if isNone(txt) {
		return nil
	}
	f := &Flow{Text: txt, Line: s.line}
	for _, n := range s.blocks {
		for _, pc := range p.pieces(n) {
			cand := pc.link
			if cand == "" && pc.code {
				cand = pc.s
			}
			if f.Ref == "" && strings.HasSuffix(strings.ToLower(cand), ".md") && !strings.Contains(cand, "://") {
				f.Ref = cand
				if pc.off >= 0 {
					f.Line = p.line(pc.off)
				}
			}
		}
	}
	return f
}
