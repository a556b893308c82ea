package detect

import (
	"bufio"
	"bytes"
	"path"
	"strings"
)

// ignoreRule is one line of a .gitignore file.
type ignoreRule struct {
	negate   bool
	dirOnly  bool
	anchored bool     // the pattern has a slash before its end: match from the file's directory
	segs     []string // pattern split on "/"
}

// ignoreSet holds the rules of one .gitignore, relative to the directory
// that contains it ("" for the walk root).
type ignoreSet struct {
	base  string
	rules []ignoreRule
}

// parseIgnore parses .gitignore content following gitignore(5): blank lines
// and comments are skipped, "!" negates, a trailing "/" matches directories
// only, and a slash anywhere else anchors the pattern to base.
func parseIgnore(base string, data []byte) ignoreSet {
	set := ignoreSet{base: base}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		line = trimTrailingSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var r ignoreRule
		if strings.HasPrefix(line, "!") {
			r.negate = true
			line = line[1:]
		} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly = true
			line = strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		if strings.Contains(line, "/") {
			r.anchored = true
			line = strings.TrimPrefix(line, "/")
		}
		r.segs = strings.Split(line, "/")
		set.rules = append(set.rules, r)
	}
	return set
}

// trimTrailingSpace removes trailing spaces unless escaped with a backslash.
func trimTrailingSpace(s string) string {
	for strings.HasSuffix(s, " ") && !strings.HasSuffix(s, `\ `) {
		s = s[:len(s)-1]
	}
	return s
}

// match reports whether rel (slash-separated, relative to set.base) is
// matched by a rule, and whether that match ignores (true) or re-includes.
func (s *ignoreSet) match(rel string, isDir bool) (matched, ignored bool) {
	name := path.Base(rel)
	var parts []string
	for i := len(s.rules) - 1; i >= 0; i-- { // the last matching rule wins
		r := &s.rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		var ok bool
		if r.anchored {
			if parts == nil {
				parts = strings.Split(rel, "/")
			}
			ok = matchSegs(r.segs, parts)
		} else {
			ok = globMatch(r.segs[0], name)
		}
		if ok {
			return true, !r.negate
		}
	}
	return false, false
}

// matchSegs matches path segments against pattern segments where "**"
// matches zero or more whole segments.
func matchSegs(pat, parts []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			pat = pat[1:]
			if len(pat) == 0 {
				return true
			}
			for i := 0; i <= len(parts); i++ {
				if matchSegs(pat, parts[i:]) {
					return true
				}
			}
			return false
		}
		if len(parts) == 0 || !globMatch(pat[0], parts[0]) {
			return false
		}
		pat, parts = pat[1:], parts[1:]
	}
	return len(parts) == 0
}

// globMatch is path.Match with a malformed pattern treated as no match, as
// git does.
func globMatch(pattern, name string) bool {
	if pattern == "**" {
		return true
	}
	ok, err := path.Match(pattern, name)
	return err == nil && ok
}

// ignoreStack is the chain of .gitignore sets from the root down to the
// directory being walked.
type ignoreStack []ignoreSet

// ignored reports whether rel (relative to the walk root) is ignored. Deeper
// .gitignore files take precedence over shallower ones.
func (st ignoreStack) ignored(rel string, isDir bool) bool {
	for i := len(st) - 1; i >= 0; i-- {
		s := &st[i]
		sub := rel
		if s.base != "" {
			sub = strings.TrimPrefix(rel, s.base+"/")
		}
		if matched, ign := s.match(sub, isDir); matched {
			return ign
		}
	}
	return false
}
