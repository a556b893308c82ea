package gates

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Cache stores gate results as JSON files, one per (command line, tree,
// environment), under a directory such as .sluice/cache/gates. It is safe
// for concurrent use by goroutines and processes: every file is written to
// a temporary name and renamed into place.
type Cache struct {
	dir string
}

// NewCache returns a cache in dir, creating it.
func NewCache(dir string) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("gate cache %s: %w", dir, err)
	}
	return &Cache{dir: dir}, nil
}

// cacheKeyVersion changes when Result's meaning changes, so old entries are
// not misread.
const cacheKeyVersion = "gates-v1"

func cacheKey(line, treeKey string, env []string) string {
	env = slices.Sorted(slices.Values(env))
	b, _ := json.Marshal([]any{cacheKeyVersion, line, treeKey, env})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func (c *Cache) path(key string) string { return filepath.Join(c.dir, key+".json") }

func (c *Cache) get(key string) (Result, bool) {
	b, err := os.ReadFile(c.path(key))
	if err != nil {
		return Result{}, false
	}
	var res Result
	if json.Unmarshal(b, &res) != nil {
		return Result{}, false // a damaged entry is a miss; the next put replaces it
	}
	return res, true
}

func (c *Cache) put(key string, res Result) error {
	res.Cached = false
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(c.dir, ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), c.path(key)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
