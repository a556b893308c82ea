package grid

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-run/sluice/internal/contract"
)

// CurrentFile names the file, inside the .sluice directory, that holds the
// name of the active grid file.
const CurrentFile = "grid.current"

const (
	hashPrefix = "hash: sha256:"
	header     = "# sluice gate grid: the gates on the arrows between the fixed roles.\n" +
		"# Written by `sluice init`. Do not edit: a changed file is detected by its\n" +
		"# hash and refused. Change .sluice/config.yaml and run `sluice init` again;\n" +
		"# it writes a new version and points grid.current at it.\n"
)

var fileName = regexp.MustCompile(`^grid\.v([1-9][0-9]*)\.yaml$`)

// FileName returns the file name of grid version n.
func FileName(n int) string { return "grid.v" + strconv.Itoa(n) + ".yaml" }

// Write stores g in sluiceDir as a new immutable version, unless it equals
// the current grid. The first grid is grid.v1.yaml; a grid that differs from
// the current one is written as grid.v(N+1).yaml, N being the highest version
// present, and grid.current is pointed at it. A current grid that fails to
// load (edited by hand, missing) counts as different. Write sets g's Version
// and Hash to those of the file it returns; created reports whether that file
// was written now.
func Write(sluiceDir string, g *Grid) (path string, created bool, err error) {
	if err := os.MkdirAll(sluiceDir, 0o755); err != nil {
		return "", false, fmt.Errorf("write grid: %w", err)
	}
	if cur, err := Load(sluiceDir); err == nil {
		same, err := equal(cur, g)
		if err != nil {
			return "", false, err
		}
		if same {
			g.Version, g.Hash = cur.Version, cur.Hash
			return filepath.Join(sluiceDir, FileName(cur.Version)), false, nil
		}
	}
	n, err := maxVersion(sluiceDir)
	if err != nil {
		return "", false, err
	}
	for {
		n++
		g.Version = n
		data, sum, err := encode(g)
		if err != nil {
			return "", false, err
		}
		path = filepath.Join(sluiceDir, FileName(n))
		err = writeExclusive(path, data)
		if errors.Is(err, fs.ErrExist) {
			continue // another init took this version; take the next
		}
		if err != nil {
			return "", false, err
		}
		g.Hash = sum
		break
	}
	if err := writeAtomic(filepath.Join(sluiceDir, CurrentFile), []byte(FileName(n)+"\n")); err != nil {
		return "", false, err
	}
	return path, true, nil
}

// Load reads the grid that grid.current names in sluiceDir and checks it: its
// content hash, its schema, and that its fixed clauses are exactly those of
// the role contracts. A project without a grid gets ErrNoGrid; a grid edited
// after it was written gets ErrTampered, with the file named.
func Load(sluiceDir string) (*Grid, error) {
	cur := filepath.Join(sluiceDir, CurrentFile)
	b, err := os.ReadFile(cur)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s does not exist; run `sluice init` to write the grid: %w", cur, ErrNoGrid)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", cur, err)
	}
	name := strings.TrimSpace(string(b))
	if !fileName.MatchString(name) {
		return nil, fmt.Errorf("%s names %q, not a grid file (grid.vN.yaml); run `sluice init` again to write a new version: %w", cur, name, ErrTampered)
	}
	return LoadFile(filepath.Join(sluiceDir, name))
}

// LoadFile reads and checks one grid file, as Load does. A run that recorded
// the grid version it started with resumes with that file.
func LoadFile(path string) (*Grid, error) {
	m := fileName.FindStringSubmatch(filepath.Base(path))
	if m == nil {
		return nil, fmt.Errorf("load grid %s: not a grid file name (grid.vN.yaml)", path)
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("grid file %s does not exist; run `sluice init` again to write a new version: %w", path, ErrNoGrid)
	}
	if err != nil {
		return nil, fmt.Errorf("read grid: %w", err)
	}
	g, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("grid file %s: %w; do not edit grid files: change .sluice/config.yaml and run `sluice init` again, which writes a new version", path, err)
	}
	if strconv.Itoa(g.Version) != m[1] {
		return nil, fmt.Errorf("grid file %s holds version %d; run `sluice init` again to write a new version: %w", path, g.Version, ErrTampered)
	}
	roles, err := contract.Roles()
	if err != nil {
		return nil, err
	}
	if err := check(g, roles); err != nil {
		return nil, fmt.Errorf("grid file %s: %w; run `sluice init` again to write a new version: %w", path, err, ErrTampered)
	}
	return g, nil
}

// encode renders g as a grid file and returns the file and its hash.
func encode(g *Grid) (data []byte, sum string, err error) {
	body, err := marshal(g)
	if err != nil {
		return nil, "", err
	}
	content := append([]byte(header), body...)
	sum = digest(content)
	var b bytes.Buffer
	b.WriteString(header)
	b.WriteString(hashPrefix + strings.TrimPrefix(sum, "sha256:") + "\n")
	b.Write(body)
	return b.Bytes(), sum, nil
}

func marshal(g *Grid) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(g); err != nil {
		return nil, fmt.Errorf("encode grid: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode grid: %w", err)
	}
	return b.Bytes(), nil
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// decode checks a grid file's hash (over every byte but the hash line) and
// parses it strictly.
func decode(data []byte) (*Grid, error) {
	lines := bytes.SplitAfter(data, []byte("\n"))
	var (
		stored string
		rest   bytes.Buffer
	)
	for _, l := range lines {
		if bytes.HasPrefix(l, []byte(hashPrefix)) {
			if stored != "" {
				return nil, fmt.Errorf("two hash lines: %w", ErrTampered)
			}
			stored = "sha256:" + strings.TrimSpace(strings.TrimPrefix(string(l), hashPrefix))
			continue
		}
		rest.Write(l)
	}
	if stored == "" {
		return nil, fmt.Errorf("no content hash line: %w", ErrTampered)
	}
	if got := digest(rest.Bytes()); got != stored {
		return nil, fmt.Errorf("content hash is %s, the file records %s: %w", got, stored, ErrTampered)
	}
	var g Grid
	dec := yaml.NewDecoder(bytes.NewReader(rest.Bytes()))
	dec.KnownFields(true)
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("parse: %v: %w", err, ErrTampered)
	}
	g.Hash = stored
	return &g, nil
}

// equal reports whether two grids have the same content, versions aside.
func equal(a, b *Grid) (bool, error) {
	ac, bc := *a, *b
	ac.Version, bc.Version = 0, 0
	ac.Hash, bc.Hash = "", ""
	am, err := marshal(&ac)
	if err != nil {
		return false, err
	}
	bm, err := marshal(&bc)
	if err != nil {
		return false, err
	}
	return bytes.Equal(am, bm), nil
}

// check verifies that a grid's fixed parts are exactly the role contracts and
// that its project parts are well formed. It catches a file whose hash was
// recomputed after an edit.
func check(g *Grid, roles []contract.Role) error {
	if _, ok := contract.DepthRank(g.Depth); !ok {
		return fmt.Errorf("depth %q is not a review depth", g.Depth)
	}
	if !slices.Contains(Severities(), g.SeverityThreshold) {
		return fmt.Errorf("severity threshold %q is not a severity", g.SeverityThreshold)
	}
	if len(g.Arrows) != len(roles) {
		return fmt.Errorf("%d arrows, the contracts have %d", len(g.Arrows), len(roles))
	}
	for name := range g.Gates {
		if !slices.Contains(contract.GateNames(), name) {
			return fmt.Errorf("unknown gate %q", name)
		}
	}
	for i, r := range roles {
		ca, ga := r.Exit, g.Arrows[i]
		if ga.Name != ca.Name || ga.From != ca.From || ga.To != ca.To || ga.Adversarial != ca.Adversarial ||
			ga.Attester != ca.Attester || ga.Remediation != ca.Remediation || ga.PerTask != ca.PerTask {
			return fmt.Errorf("arrow %d (%s) differs from the %s contract", i+1, ga.Name, r.Name)
		}
		if ga.Bound < 0 || ga.Bound > ca.Bound {
			return fmt.Errorf("arrow %s: bound %d is outside the contract's 0..%d", ga.Name, ga.Bound, ca.Bound)
		}
		byID := map[string]Clause{}
		for _, c := range ga.Clauses {
			if _, dup := byID[c.ID]; dup {
				return fmt.Errorf("arrow %s: clause %s appears twice", ga.Name, c.ID)
			}
			byID[c.ID] = c
		}
		fixedIDs := map[string]bool{}
		for _, cc := range ca.Clauses {
			fixedIDs[cc.ID] = true
			want := fromContract(cc)
			got, ok := byID[cc.ID]
			if !ok {
				return fmt.Errorf("arrow %s: fixed clause %s is missing", ga.Name, cc.ID)
			}
			cmd := got.Command
			got.Command = ""
			if got != want {
				return fmt.Errorf("arrow %s: fixed clause %s differs from the %s contract", ga.Name, cc.ID, r.Name)
			}
			if e, _ := contract.ParseEval(cc.Kind, cc.Eval); e.Type == "gate" && cmd != g.Gates[e.Name].Command {
				return fmt.Errorf("arrow %s: clause %s runs %q, but gate %s is %q", ga.Name, cc.ID, cmd, e.Name, g.Gates[e.Name].Command)
			}
		}
		for _, c := range ga.Clauses {
			if fixedIDs[c.ID] {
				continue
			}
			if c.Fixed {
				return fmt.Errorf("arrow %s: clause %s is marked fixed but no contract has it", ga.Name, c.ID)
			}
			if _, ok := contract.DepthRank(c.Depth); !ok {
				return fmt.Errorf("arrow %s: clause %s: depth %q", ga.Name, c.ID, c.Depth)
			}
			switch {
			case c.Kind == contract.KindCommand && c.Eval == "exec" && c.Command != "":
			case c.Kind == contract.KindAttested && c.Eval == "attest:"+ga.Attester && ga.Attester != contract.None:
			default:
				return fmt.Errorf("arrow %s: project clause %s is not a well-formed command or attested clause", ga.Name, c.ID)
			}
		}
	}
	return nil
}

// maxVersion returns the highest N of the grid.vN.yaml files in dir, or 0.
func maxVersion(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("list grid versions: %w", err)
	}
	n := 0
	for _, e := range entries {
		if m := fileName.FindStringSubmatch(e.Name()); m != nil {
			if v, err := strconv.Atoi(m[1]); err == nil && v > n {
				n = v
			}
		}
	}
	return n, nil
}

// writeExclusive creates path with data, read-only, failing with
// fs.ErrExist if it exists. The content is complete before the name appears:
// it is written to a temporary file and hard-linked into place.
func writeExclusive(path string, data []byte) error {
	tmp, err := writeTemp(path, data, 0o444)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fs.ErrExist
		}
		return fmt.Errorf("write grid %s: %w", path, err)
	}
	return nil
}

// writeAtomic replaces path with data.
func writeAtomic(path string, data []byte) error {
	tmp, err := writeTemp(path, data, 0o644)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func writeTemp(path string, data []byte, perm os.FileMode) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(f.Name(), perm)
	}
	if werr != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("write %s: %w", path, werr)
	}
	return f.Name(), nil
}
