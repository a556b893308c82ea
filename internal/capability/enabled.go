package capability

import (
	"fmt"
	"sort"
	"strings"
)

// DefaultBackend is the backend assumed when none is configured.
const DefaultBackend = "api"

// Enabled decides which capabilities are active for a run on backend.
//
// enabled is capabilities.enabled from the configuration. When it is nil
// (the key is absent) the capabilities whose default is "on" are enabled;
// when it is present, even empty, it is authoritative and defaults are
// ignored. A capability named there that no one provides is skipped with a
// notice (CheckEnabled reports it as an error). Requirements of an enabled
// capability are enabled with it, with a notice. A capability whose
// runtimeCompat excludes backend is skipped with a notice, and so is every
// capability that requires it: a skipped capability contributes nothing,
// so the run is the run without it. active is sorted by id.
func Enabled(all []Capability, enabled []string, backend string) (active []Capability, notices []string) {
	if backend == "" {
		backend = DefaultBackend
	}
	byID := map[string]Capability{}
	for _, c := range all {
		byID[c.ID] = c
	}
	var want []string
	if enabled == nil {
		for _, c := range sortedByID(all) {
			if c.Default == "on" {
				want = append(want, c.ID)
			}
		}
	} else {
		for _, id := range enabled {
			if _, ok := byID[id]; !ok {
				notices = append(notices, fmt.Sprintf("capability %q is enabled in capabilities.enabled but no capability has that id; skipped", id))
				continue
			}
			if !contains(want, id) {
				want = append(want, id)
			}
		}
	}
	// Pull in requirements, breadth first, remembering who asked.
	chosen := map[string]bool{}
	queue := append([]string(nil), want...)
	for _, id := range want {
		chosen[id] = true
	}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		for _, r := range byID[id].Requires {
			if _, ok := byID[r]; !ok || chosen[r] {
				continue
			}
			chosen[r] = true
			queue = append(queue, r)
			notices = append(notices, fmt.Sprintf("capability %q enabled because %q requires it", r, id))
		}
	}
	// Drop what cannot run, then what depends on it, until nothing changes.
	skipped := map[string]bool{}
	ids := sortedKeys(chosen)
	for _, id := range ids {
		c := byID[id]
		if !contains(c.RuntimeCompat, backend) {
			skipped[id] = true
			notices = append(notices, fmt.Sprintf("capability %q skipped: it supports the %s backend(s), not %s", id, strings.Join(c.RuntimeCompat, ", "), backend))
		}
	}
	for changed := true; changed; {
		changed = false
		for _, id := range ids {
			if skipped[id] {
				continue
			}
			for _, r := range byID[id].Requires {
				_, known := byID[r]
				if !known || skipped[r] {
					why := "it is not installed"
					if known {
						why = "it was skipped"
					}
					skipped[id] = true
					changed = true
					notices = append(notices, fmt.Sprintf("capability %q skipped: it requires %q and %s", id, r, why))
					break
				}
			}
		}
	}
	for _, id := range ids {
		if !skipped[id] {
			active = append(active, byID[id])
		}
	}
	return active, notices
}

// CheckEnabled reports every id in capabilities.enabled that no capability
// provides, and every capabilities.config value that does not fit its
// capability's config slice.
func CheckEnabled(all []Capability, enabled []string, cfg map[string]map[string]any) []error {
	byID := map[string]Capability{}
	for _, c := range all {
		byID[c.ID] = c
	}
	known := sortedKeys(byID)
	var errs []error
	for i, id := range enabled {
		if _, ok := byID[id]; !ok {
			errs = append(errs, &Error{File: ".sluice/config.yaml", Path: fmt.Sprintf("$.capabilities.enabled[%d]", i), Msg: fmt.Sprintf("no capability has id %q", id), Fix: "use one of " + orNone(known) + ", or install it"})
		}
	}
	ids := sortedKeys(cfg)
	sort.Strings(ids)
	for _, id := range ids {
		c, ok := byID[id]
		if !ok {
			errs = append(errs, &Error{File: ".sluice/config.yaml", Path: "$.capabilities.config." + id, Msg: fmt.Sprintf("no capability has id %q", id), Fix: "remove it or use one of " + orNone(known)})
			continue
		}
		_, cerrs := ConfigValues(c, cfg[id])
		errs = append(errs, cerrs...)
	}
	return errs
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "(none installed)"
	}
	return strings.Join(list, ", ")
}
