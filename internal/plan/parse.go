package plan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ErrSyntax is wrapped by every error Parse returns for input that is not a
// well-formed plan document.
var ErrSyntax = errors.New("invalid plan")

// ParseError lists every structural problem found in a plan file. Parse
// reports all of them at once so a person can fix the file in one pass.
type ParseError struct {
	Source string
	Errs   []LineError
}

// LineError is one problem at one line of a plan file.
type LineError struct {
	Line    int    // 1-based; 0 when unknown
	TaskID  string // the task the line belongs to, if any
	Field   string // the field, dotted for nested fields ("specification_adherence.tech_choices")
	Message string
}

func (e *ParseError) Error() string {
	var b strings.Builder
	for i, le := range e.Errs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Source)
		if le.Line > 0 {
			fmt.Fprintf(&b, ":%d", le.Line)
		}
		b.WriteString(": ")
		if le.TaskID != "" {
			fmt.Fprintf(&b, "task %q: ", le.TaskID)
		}
		if le.Field != "" {
			b.WriteString(le.Field)
			b.WriteString(": ")
		}
		b.WriteString(le.Message)
	}
	return b.String()
}

func (e *ParseError) Unwrap() error { return ErrSyntax }

// Load reads and parses the plan file at path.
func Load(path string) (*Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	return Parse(data, path)
}

// Parse decodes a plan.yaml strictly: unknown fields, values of the wrong
// shape and more than one YAML document are errors. Errors name source:line,
// the task id and the field. Parse checks shape only; Validate checks meaning.
func Parse(data []byte, source string) (*Plan, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &ParseError{Source: source, Errs: []LineError{{Message: "the file is empty; a plan needs a goal and a list of tasks"}}}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		return nil, &ParseError{Source: source, Errs: []LineError{yamlError(err)}}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &ParseError{Source: source, Errs: []LineError{{Line: extra.Line, Message: "more than one YAML document; a plan file holds exactly one"}}}
	} else if !errors.Is(err, io.EOF) {
		return nil, &ParseError{Source: source, Errs: []LineError{yamlError(err)}}
	}

	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	w := &walker{}
	w.walk(root, reflect.TypeOf(Plan{}), loc{})
	if len(w.errs) > 0 {
		return nil, &ParseError{Source: source, Errs: w.errs}
	}

	var p Plan
	// The walk above checked every key and shape; what remains for the
	// decoder is scalar conversion (an iteration that is not a number).
	if err := root.Decode(&p); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			pe := &ParseError{Source: source}
			for _, msg := range te.Errors {
				line, rest := splitLine(msg)
				l := w.locate(line)
				l.Message = rest
				pe.Errs = append(pe.Errs, l)
			}
			return nil, pe
		}
		return nil, &ParseError{Source: source, Errs: []LineError{yamlError(err)}}
	}
	return &p, nil
}

var yamlLineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// yamlError turns a yaml syntax error ("yaml: line 3: did not find ...")
// into a LineError so it prints as source:3.
func yamlError(err error) LineError {
	line, msg := splitLine(err.Error())
	return LineError{Line: line, Message: msg}
}

func splitLine(msg string) (int, string) {
	m := yamlLineRE.FindStringSubmatch(msg)
	if m == nil {
		return 0, strings.TrimPrefix(msg, "yaml: ")
	}
	n, _ := strconv.Atoi(m[1])
	return n, m[2]
}

// loc is where the walker is: which task, which field.
type loc struct {
	taskID string
	field  string
}

// span records which task and field a range of lines belongs to, so decoder
// errors that carry only a line number can be attributed.
type span struct {
	line int
	loc  loc
}

type walker struct {
	errs  []LineError
	spans []span
}

func (w *walker) errorf(n *yaml.Node, l loc, format string, args ...any) {
	w.errs = append(w.errs, LineError{Line: n.Line, TaskID: l.taskID, Field: l.field, Message: fmt.Sprintf(format, args...)})
}

func (w *walker) locate(line int) LineError {
	best := LineError{Line: line}
	for _, s := range w.spans {
		if s.line <= line {
			best.TaskID, best.Field = s.loc.taskID, s.loc.field
		}
	}
	return best
}

// yamlFields maps the yaml keys of a struct type to their field types.
func yamlFields(t reflect.Type) (map[string]reflect.Type, []string) {
	fields := map[string]reflect.Type{}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		fields[name] = f.Type
		names = append(names, name)
	}
	sort.Strings(names)
	return fields, names
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "null"
		}
		return fmt.Sprintf("the value %q", n.Value)
	}
	return "an unexpected node"
}

func (w *walker) walk(n *yaml.Node, t reflect.Type, l loc) {
	w.spans = append(w.spans, span{line: n.Line, loc: l})
	if n.Kind == yaml.AliasNode {
		w.errorf(n, l, "aliases are not supported in plan files; write the value out")
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			w.errorf(n, l, "must be a mapping of fields, not %s", kindName(n))
			return
		}
		fields, names := yamlFields(t)
		if t == reflect.TypeOf(Task{}) {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == "id" && n.Content[i+1].Kind == yaml.ScalarNode {
					l.taskID = n.Content[i+1].Value
				}
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			fl := l
			if t == reflect.TypeOf(Plan{}) || t == reflect.TypeOf(Task{}) {
				fl.field = k.Value
			} else if l.field != "" {
				fl.field = l.field + "." + k.Value
			} else {
				fl.field = k.Value
			}
			ft, ok := fields[k.Value]
			if !ok {
				fl.field = ""
				if l.field != "" && t != reflect.TypeOf(Plan{}) && t != reflect.TypeOf(Task{}) {
					fl.field = l.field
				}
				w.errorf(k, fl, "unknown field %q (known fields: %s)", k.Value, strings.Join(names, ", "))
				continue
			}
			w.walk(v, ft, fl)
		}
	case reflect.Slice:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return
		}
		if n.Kind != yaml.SequenceNode {
			w.errorf(n, l, "must be a list, not %s", kindName(n))
			return
		}
		for i, item := range n.Content {
			il := l
			if t.Elem().Kind() == reflect.Struct && il.taskID == "" && il.field == "tasks" {
				il.field = ""
				il.taskID = ""
				// A task without a usable id is named by position.
				if item.Kind == yaml.MappingNode && !hasScalarKey(item, "id") {
					il.taskID = fmt.Sprintf("#%d", i+1)
				}
			} else if t.Elem().Kind() == reflect.Struct {
				il.field = fmt.Sprintf("%s[%d]", l.field, i)
			}
			w.walk(item, t.Elem(), il)
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			w.errorf(n, l, "must be a string, not %s", kindName(n))
		}
	case reflect.Int, reflect.Bool:
		if n.Kind != yaml.ScalarNode {
			w.errorf(n, l, "must be a %s, not %s", t.Kind(), kindName(n))
		}
	}
}

func hasScalarKey(n *yaml.Node, key string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key && n.Content[i+1].Kind == yaml.ScalarNode {
			return true
		}
	}
	return false
}

// Marshal encodes a plan as YAML. The output is deterministic: fields in
// declaration order, two-space indentation, no empty optional fields.
func Marshal(p *Plan) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(p); err != nil {
		return nil, fmt.Errorf("encode plan: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode plan: %w", err)
	}
	return buf.Bytes(), nil
}
