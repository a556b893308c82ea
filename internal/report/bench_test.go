package report

import (
	"path/filepath"
	"testing"

	"github.com/sluice-run/sluice/internal/report/fixture"
	"github.com/sluice-run/sluice/internal/run"
)

// BenchmarkRender128 renders the report of a finished 128-task run, as the
// end of every run does.
func BenchmarkRender128(b *testing.B) {
	r := fixture.Simulate(fixture.Options{Tasks: 128, Jobs: 8, Revisions: 1, FailGates: []string{"t5", "t77"}})
	dir, err := fixture.Write(filepath.Join(b.TempDir(), "runs"), r)
	if err != nil {
		b.Fatal(err)
	}
	l, err := run.LoadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var size int
	for b.Loop() {
		page, err := Render(l)
		if err != nil {
			b.Fatal(err)
		}
		size = len(page)
	}
	b.ReportMetric(float64(size), "bytes/report")
}
