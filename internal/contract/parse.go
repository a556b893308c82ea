package contract

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// The section headings a role contract must have, in this order.
const (
	secPurpose       = "Purpose"
	secPreconditions = "Entry preconditions"
	secExitArrow     = "Exit arrow"
	secExitGate      = "Exit gate"
)

var (
	arrowHeader = []string{"Arrow", "Adversarial", "Attester", "Remediation", "Bound", "Per task"}
	gateHeader  = []string{"#", "Clause", "Kind", "Eval", "Depth"}
)

// ParseRole parses one role contract. name is the role's name ("analyst");
// the document's title must match it. Every clause is validated: its kind,
// depth and eval, and that attested clauses name the arrow's adversary or
// attester.
func ParseRole(name string, src []byte) (Role, error) {
	md := goldmark.New(goldmark.WithExtensions(extension.Table))
	doc := md.Parser().Parse(text.NewReader(src))

	r := Role{Name: name}
	var (
		section   string
		order     []string
		arrowRows [][]string
		gateRows  [][]string
	)
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		switch n := n.(type) {
		case *ast.Heading:
			title := inlineText(n, src)
			switch n.Level {
			case 1:
				if r.Title != "" {
					return Role{}, fmt.Errorf("second title %q", title)
				}
				if !strings.EqualFold(title, name) {
					return Role{}, fmt.Errorf("title %q does not name the role %q", title, name)
				}
				r.Title = title
			case 2:
				switch title {
				case secPurpose, secPreconditions, secExitArrow, secExitGate:
				default:
					return Role{}, fmt.Errorf("unknown section %q (want %s, %s, %s, %s)", title, secPurpose, secPreconditions, secExitArrow, secExitGate)
				}
				for _, s := range order {
					if s == title {
						return Role{}, fmt.Errorf("section %q appears twice", title)
					}
				}
				section = title
				order = append(order, title)
			default:
				return Role{}, fmt.Errorf("heading %q: only # and ## headings are allowed", title)
			}
		case *ast.Paragraph:
			if section != secPurpose {
				return Role{}, fmt.Errorf("paragraph %q outside the %s section", abbrev(inlineText(n, src)), secPurpose)
			}
			if r.Purpose != "" {
				r.Purpose += "\n\n"
			}
			r.Purpose += inlineText(n, src)
		case *ast.List:
			if section != secPreconditions {
				return Role{}, fmt.Errorf("list outside the %s section", secPreconditions)
			}
			for it := n.FirstChild(); it != nil; it = it.NextSibling() {
				item := strings.TrimSpace(blockText(it, src))
				if item == "" {
					return Role{}, fmt.Errorf("empty entry precondition")
				}
				r.Preconditions = append(r.Preconditions, item)
			}
		case *east.Table:
			var err error
			switch section {
			case secExitArrow:
				if arrowRows != nil {
					return Role{}, fmt.Errorf("section %q has more than one table", section)
				}
				arrowRows, err = tableRows(n, src, arrowHeader)
			case secExitGate:
				if gateRows != nil {
					return Role{}, fmt.Errorf("section %q has more than one table", section)
				}
				gateRows, err = tableRows(n, src, gateHeader)
			default:
				err = fmt.Errorf("table outside the %s and %s sections", secExitArrow, secExitGate)
			}
			if err != nil {
				return Role{}, fmt.Errorf("section %q: %w", section, err)
			}
		default:
			return Role{}, fmt.Errorf("unexpected %s block in section %q", n.Kind(), section)
		}
	}

	switch {
	case r.Title == "":
		return Role{}, fmt.Errorf("missing title (# %s)", name)
	case r.Purpose == "":
		return Role{}, fmt.Errorf("missing %s section text", secPurpose)
	case len(r.Preconditions) == 0:
		return Role{}, fmt.Errorf("missing %s list", secPreconditions)
	case len(arrowRows) != 1:
		return Role{}, fmt.Errorf("section %q must have a table with exactly one row, has %d", secExitArrow, len(arrowRows))
	case len(gateRows) == 0:
		return Role{}, fmt.Errorf("section %q must have a table with at least one clause", secExitGate)
	}

	exit, err := parseArrow(name, arrowRows[0])
	if err != nil {
		return Role{}, fmt.Errorf("section %q: %w", secExitArrow, err)
	}
	ids := map[string]bool{}
	for i, row := range gateRows {
		c := Clause{Arrow: exit.Name, ID: row[0], Text: row[1], Kind: row[2], Eval: row[3], Depth: row[4], Fixed: true}
		if err := validateClause(exit, c); err != nil {
			return Role{}, fmt.Errorf("section %q row %d: %w", secExitGate, i+1, err)
		}
		if ids[c.ID] {
			return Role{}, fmt.Errorf("section %q row %d: clause id %q appears twice", secExitGate, i+1, c.ID)
		}
		ids[c.ID] = true
		exit.Clauses = append(exit.Clauses, c)
	}
	r.Exit = exit
	return r, nil
}

func parseArrow(role string, row []string) (Arrow, error) {
	a := Arrow{Name: row[0], Adversarial: row[1], Attester: row[2], Remediation: row[3]}
	from, to, ok := strings.Cut(a.Name, "->")
	if !ok || from != role {
		return Arrow{}, fmt.Errorf("arrow %q must be %s-><next role>", a.Name, role)
	}
	a.From, a.To = from, to
	switch a.Adversarial {
	case None, Critic, CodeReviewer:
	default:
		return Arrow{}, fmt.Errorf("arrow %s: adversarial %q (want none, critic or code-reviewer)", a.Name, a.Adversarial)
	}
	switch a.Attester {
	case None, Critic, Verifier:
	default:
		return Arrow{}, fmt.Errorf("arrow %s: attester %q (want none, critic or verifier)", a.Name, a.Attester)
	}
	if a.Remediation == "" {
		return Arrow{}, fmt.Errorf("arrow %s: empty remediation (write none if there is none)", a.Name)
	}
	bound, err := strconv.Atoi(row[4])
	if err != nil || bound < 0 {
		return Arrow{}, fmt.Errorf("arrow %s: bound %q is not a non-negative integer", a.Name, row[4])
	}
	a.Bound = bound
	switch row[5] {
	case "yes":
		a.PerTask = true
	case "no":
	default:
		return Arrow{}, fmt.Errorf("arrow %s: per task %q (want yes or no)", a.Name, row[5])
	}
	return a, nil
}

func validateClause(a Arrow, c Clause) error {
	if !ValidID(c.ID) {
		return fmt.Errorf("clause id %q: want lower-case letters, digits and dashes, starting with a letter", c.ID)
	}
	if c.Text == "" {
		return fmt.Errorf("clause %s: empty text", c.ID)
	}
	if _, ok := DepthRank(c.Depth); !ok {
		return fmt.Errorf("clause %s: depth %q (want one of %s)", c.ID, c.Depth, strings.Join(Depths(), ", "))
	}
	e, err := ParseEval(c.Kind, c.Eval)
	if err != nil {
		return fmt.Errorf("clause %s: %w", c.ID, err)
	}
	if e.Type == "attest" && e.Name != a.Adversarial && e.Name != a.Attester {
		return fmt.Errorf("clause %s: attested by %q, but arrow %s has adversary %q and attester %q", c.ID, e.Name, a.Name, a.Adversarial, a.Attester)
	}
	return nil
}

// tableRows returns a table's body rows as trimmed cell text, after checking
// that its header is exactly want.
func tableRows(t *east.Table, src []byte, want []string) ([][]string, error) {
	var rows [][]string
	for n := t.FirstChild(); n != nil; n = n.NextSibling() {
		var cells []string
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			cells = append(cells, inlineText(c, src))
		}
		if _, ok := n.(*east.TableHeader); ok {
			if strings.Join(cells, "|") != strings.Join(want, "|") {
				return nil, fmt.Errorf("table header is | %s |, want | %s |", strings.Join(cells, " | "), strings.Join(want, " | "))
			}
			continue
		}
		if len(cells) != len(want) {
			return nil, fmt.Errorf("row %d has %d cells, want %d", len(rows)+1, len(cells), len(want))
		}
		rows = append(rows, cells)
	}
	return rows, nil
}

// inlineText concatenates the text of n's inline descendants, with code spans
// unquoted and line breaks as spaces.
func inlineText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(src))
			if c.SoftLineBreak() || c.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		}
		return ast.WalkContinue, nil
	})
	return strings.Join(strings.Fields(b.String()), " ")
}

// blockText is inlineText over a block's child blocks, joined by spaces.
func blockText(n ast.Node, src []byte) string {
	var parts []string
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		parts = append(parts, inlineText(c, src))
	}
	return strings.Join(parts, " ")
}

func abbrev(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
