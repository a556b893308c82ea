package local

import (
	"context"
	"testing"

	"github.com/sluice-run/sluice/internal/loop"
)

// TestWitnessBringsInOtherWorkersSpending: a worker whose own calls are
// under the limit refuses the next call once the run's state shows the
// limit reached by others, and witnessing less than it has seen itself
// changes nothing.
func TestWitnessBringsInOtherWorkersSpending(t *testing.T) {
	ctx := context.Background()
	b := NewBudget(loop.Budget{Tokens: 1000}, loop.Usage{Tokens: 100})
	b.Spend(300, 0)
	if err := b.Reserve(ctx); err != nil {
		t.Fatalf("400 of 1000 tokens spent: %v", err)
	}
	b.Witness(loop.Usage{Tokens: 200}) // behind what this worker has seen
	b.Spend(500, 0)
	if err := b.Reserve(ctx); err != nil {
		t.Fatalf("a lower witness must not lower the account, nor count twice: 900 of 1000 tokens spent: %v", err)
	}
	b.Witness(loop.Usage{Tokens: 1000})
	if err := b.Reserve(ctx); err == nil {
		t.Fatal("the run's state shows the limit reached, and the worker still starts a call")
	}

	usd := NewBudget(loop.Budget{USD: 2}, loop.Usage{})
	usd.Witness(loop.Usage{CostUSD: 2.5})
	if err := usd.Reserve(ctx); err == nil {
		t.Fatal("the run's state shows the dollar limit passed, and the worker still starts a call")
	}
}
