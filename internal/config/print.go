package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"
)

// Mask replaces a secret when printed.
const Mask = "********"

// isSecret reports whether a key's last segment names a secret: api_key, a
// *_key, or anything with token (but not a token count), secret or
// password in its name.
func isSecret(name string) bool {
	n := strings.ToLower(name)
	switch {
	case n == "api_key_env", n == "tokens", n == "token_budget":
		return false
	case n == "api_key", strings.HasSuffix(n, "_key"), strings.HasSuffix(n, "-key"),
		strings.Contains(n, "token"), strings.Contains(n, "secret"), strings.Contains(n, "password"):
		return true
	}
	return false
}

// Masked returns a copy of c with every secret value replaced by Mask.
func (c *Config) Masked() *Config {
	out := *c
	out.Models.Providers = maps.Clone(c.Models.Providers)
	for name, p := range out.Models.Providers {
		if p.APIKey != "" {
			p.APIKey = Mask
			out.Models.Providers[name] = p
		}
	}
	if c.Capabilities.Config != nil {
		out.Capabilities.Config = make(map[string]map[string]any, len(c.Capabilities.Config))
		for capName, kv := range c.Capabilities.Config {
			m := maps.Clone(kv)
			for k, v := range m {
				if isSecret(k) && v != nil && v != "" {
					m[k] = Mask
				}
			}
			out.Capabilities.Config[capName] = m
		}
	}
	return &out
}

// Setting is one printed value with its source.
type Setting struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source Source `json:"source"`
}

// Settings lists the values worth printing, secrets masked, in the order of
// the Config struct (map keys sorted): every scalar key outside maps, and
// every non-empty value or value set by a file or the environment inside
// them.
func Settings(c *Config, src *Sources) []Setting {
	var out []Setting
	var walk func(v reflect.Value, segs []string, inMap bool)
	walk = func(v reflect.Value, segs []string, inMap bool) {
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i), appendSeg(segs, yamlName(v.Type().Field(i))), inMap)
			}
			return
		case reflect.Map:
			for _, k := range sortedKeys(v) {
				walk(v.MapIndex(k), appendSeg(segs, k.String()), true)
			}
			return
		}
		key := strings.Join(segs, ".")
		s, known := src.Lookup(key)
		if v.Kind() == reflect.Interface && !v.IsNil() {
			v = v.Elem()
		}
		if (inMap || v.Kind() == reflect.Slice) && v.IsZero() && (!known || s.Kind == SourceDefault) {
			return
		}
		val := format(v)
		if isSecret(segs[len(segs)-1]) && val != "" && val != `""` {
			val = Mask
		}
		if !known {
			s = Source{Kind: SourceDefault}
		}
		out = append(out, Setting{Key: key, Value: val, Source: s})
	}
	walk(reflect.ValueOf(c.Masked()).Elem(), nil, false)
	return out
}

func format(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		if v.String() == "" {
			return `""`
		}
		return v.String()
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Invalid:
		return "null"
	}
	// Lists and other values print as one line of JSON.
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return fmt.Sprint(v.Interface())
	}
	return string(b)
}
