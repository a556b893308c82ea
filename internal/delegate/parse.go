package delegate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ErrNoResult is returned by ParseResultBlock when the text holds no RESULT
// block; the delegation fails with ReasonNoResult unless repaired.
var ErrNoResult = errors.New("no RESULT block found")

var (
	fenceOpen = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})[ \t]*([^`\\s]*)")
	// resultLine is a RESULT heading or line: "## RESULT", "**RESULT:**",
	// "RESULT block:", "Result".
	resultLine = regexp.MustCompile(`(?i)^\s*(#{1,6}\s*)?(\*\*|__)?\s*result(\s+block)?\s*:?\s*(\*\*|__)?\s*:?\s*$`)
	outputKey  = regexp.MustCompile(`^\s*"?[a-z]+_output"?\s*:`)
)

type fenced struct {
	info    string
	content string
	line    int // 1-based line of the opening fence
	labeled bool
}

// ParseResultBlock finds the result in a model's text reply, for backends
// without tools, and returns it as JSON. It accepts the forms of seed 001: a
// "RESULT" heading or line followed by a fenced ```yaml or ```json block, or
// a fenced block whose info string is "result". Failing those, a fenced
// block whose only top-level key is a contract name ("executor_output:") is
// taken. When several blocks qualify the last one wins, since it is the
// agent's final answer. YAML is converted to JSON with its key order kept.
func ParseResultBlock(text string) (json.RawMessage, error) {
	blocks := fencedBlocks(text)
	var pick *fenced
	for i := range blocks {
		if blocks[i].labeled {
			pick = &blocks[i]
		}
	}
	if pick == nil {
		for i := range blocks {
			if outputKey.MatchString(firstLine(blocks[i].content)) {
				pick = &blocks[i]
			}
		}
	}
	if pick == nil {
		return nil, ErrNoResult
	}
	out, err := toJSON(pick.content)
	if err != nil {
		return nil, fmt.Errorf("RESULT block at line %d: %w", pick.line, err)
	}
	return out, nil
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			return l
		}
	}
	return ""
}

// fencedBlocks splits text into its fenced code blocks, marking those that
// are result blocks by info string or by the RESULT line before them.
func fencedBlocks(text string) []fenced {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	var out []fenced
	prev := "" // last non-blank line outside a fence
	for i := 0; i < len(lines); i++ {
		m := fenceOpen.FindStringSubmatch(lines[i])
		if m == nil {
			if strings.TrimSpace(lines[i]) != "" {
				prev = lines[i]
			}
			continue
		}
		fence, info := m[1], strings.ToLower(m[2])
		start := i
		var body []string
		for i++; i < len(lines); i++ {
			if closesFence(lines[i], fence) {
				break
			}
			body = append(body, lines[i])
		}
		labeled := info == "result" ||
			(resultLine.MatchString(prev) && (info == "" || info == "yaml" || info == "yml" || info == "json"))
		out = append(out, fenced{info: info, content: strings.Join(body, "\n"), line: start + 1, labeled: labeled})
		prev = ""
	}
	return out
}

// closesFence reports whether line closes a block opened by fence: the
// same character, at least as many times, and nothing else.
func closesFence(line, fence string) bool {
	t := strings.TrimRight(strings.TrimLeft(line, " "), " \t")
	return len(t) >= len(fence) && strings.Trim(t, fence[:1]) == ""
}

// toJSON converts a YAML (or JSON, which is YAML) document to compact JSON.
func toJSON(src string) (json.RawMessage, error) {
	if t := strings.TrimSpace(src); strings.HasPrefix(t, "{") {
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(t)); err == nil {
			return buf.Bytes(), nil
		}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		return nil, fmt.Errorf("not valid YAML or JSON: %w", err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, errors.New("the block is empty")
	}
	var buf bytes.Buffer
	w := &nodeWriter{b: &buf}
	if err := w.write(doc.Content[0], 0); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// maxNodes bounds the nodes written, aliases expanded, so that a block of
// nested aliases cannot blow up into gigabytes of JSON.
const maxNodes = 100_000

type nodeWriter struct {
	b     *bytes.Buffer
	nodes int
}

func (w *nodeWriter) write(n *yaml.Node, depth int) error {
	b := w.b
	if depth > 100 {
		return errors.New("the block nests deeper than 100 levels")
	}
	if w.nodes++; w.nodes > maxNodes {
		return fmt.Errorf("the block has more than %d values", maxNodes)
	}
	switch n.Kind {
	case yaml.AliasNode:
		return w.write(n.Alias, depth+1)
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			b.WriteString("null")
			return nil
		}
		return w.write(n.Content[0], depth+1)
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: a mapping key must be a plain value", k.Line)
			}
			writeString(b, k.Value)
			b.WriteByte(':')
			if err := w.write(n.Content[i+1], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := w.write(c, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		return writeScalar(b, n)
	default:
		return fmt.Errorf("line %d: unsupported YAML node", n.Line)
	}
	return nil
}

func writeScalar(b *bytes.Buffer, n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!null":
		b.WriteString("null")
	case "!!bool":
		var v bool
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		b.WriteString(strconv.FormatBool(v))
	case "!!int":
		var v int64
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		b.WriteString(strconv.FormatInt(v, 10))
	case "!!float":
		var v float64
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		data, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("line %d: %q is not a JSON number", n.Line, n.Value)
		}
		b.Write(data)
	default:
		// Strings, timestamps and anything else stay text, as written.
		writeString(b, n.Value)
	}
	return nil
}

func writeString(b *bytes.Buffer, s string) {
	data, _ := json.Marshal(s) // marshalling a string cannot fail
	b.Write(data)
}
