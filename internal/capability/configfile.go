package capability

import (
	"bytes"
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"
)

// EditEnabled turns capability id on or off in a config.yaml's
// capabilities.enabled list and returns the new file, keeping every comment
// and every other key. data may be empty (the file does not exist yet).
// When the list is absent the effective set is the capabilities that are on
// by default, named by defaults; the list written is that set with id added
// or removed, so nothing else changes meaning. changed is false when id was
// already in the wanted state and the list existed.
func EditEnabled(data []byte, file, id string, enable bool, defaults []string) (out []byte, changed bool, err error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, false, fmt.Errorf("%s: invalid YAML: %w", file, err)
	}
	if doc.Kind == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		*root = yaml.Node{Kind: yaml.MappingNode, HeadComment: root.HeadComment, LineComment: root.LineComment, FootComment: root.FootComment}
	}
	if root.Kind != yaml.MappingNode {
		return nil, false, fmt.Errorf("%s:%d: the configuration is not a mapping of keys; fix the file's top level", file, root.Line)
	}
	caps, err := mappingAt(root, "capabilities", file)
	if err != nil {
		return nil, false, err
	}
	list := valueOf(caps, "enabled")
	var current []string
	if list == nil || (list.Kind == yaml.ScalarNode && list.Tag == "!!null") {
		current = slices.Clone(defaults)
		list = &yaml.Node{Kind: yaml.SequenceNode}
		setValue(caps, "enabled", list)
		changed = true
	} else if list.Kind != yaml.SequenceNode {
		return nil, false, fmt.Errorf("%s:%d: capabilities.enabled is not a list; make it a list of capability ids", file, list.Line)
	} else {
		for _, n := range list.Content {
			current = append(current, n.Value)
		}
	}
	has := slices.Contains(current, id)
	switch {
	case enable && !has:
		current = append(current, id)
		changed = true
	case !enable && has:
		current = slices.DeleteFunc(current, func(s string) bool { return s == id })
		changed = true
	}
	if !changed {
		return data, false, nil
	}
	// Keep the nodes (and their comments) of the ids that stay.
	old := map[string]*yaml.Node{}
	for _, n := range list.Content {
		old[n.Value] = n
	}
	list.Content = list.Content[:0]
	for _, s := range current {
		if n, ok := old[s]; ok {
			list.Content = append(list.Content, n)
			continue
		}
		list.Content = append(list.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s})
	}
	if len(list.Content) == 0 {
		list.Style = yaml.FlowStyle
	} else {
		list.Style = 0
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, false, fmt.Errorf("%s: write YAML: %w", file, err)
	}
	if err := enc.Close(); err != nil {
		return nil, false, fmt.Errorf("%s: write YAML: %w", file, err)
	}
	return buf.Bytes(), true, nil
}

// mappingAt returns the mapping under key in m, adding an empty one when
// the key is absent or null.
func mappingAt(m *yaml.Node, key, file string) (*yaml.Node, error) {
	v := valueOf(m, key)
	if v == nil || (v.Kind == yaml.ScalarNode && v.Tag == "!!null") {
		n := &yaml.Node{Kind: yaml.MappingNode}
		setValue(m, key, n)
		return n, nil
	}
	if v.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: %s is not a mapping; make it a mapping with keys enabled and config", file, v.Line, key)
	}
	return v, nil
}

func valueOf(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func setValue(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}
