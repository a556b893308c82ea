package local

import (
	"context"
	"fmt"
	"sync"

	"github.com/sluice-run/sluice/internal/loop"
)

// Budget is the run's shared spending account. Every model call reserves
// before it starts: once the limit is reached no new call begins, and the
// delegation that asked ends with reason "budget" (it is re-issued on resume).
type Budget struct {
	mu     sync.Mutex
	limit  loop.Budget
	tokens int64
	usd    float64
}

// NewBudget starts an account at what the run has already spent.
func NewBudget(limit loop.Budget, spent loop.Usage) *Budget {
	return &Budget{limit: limit, tokens: spent.Tokens, usd: spent.CostUSD}
}

// Reserve refuses a call when the budget is spent.
func (b *Budget) Reserve(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.limit.Tokens > 0 && b.tokens >= b.limit.Tokens:
		return fmt.Errorf("%d of %d tokens used", b.tokens, b.limit.Tokens)
	case b.limit.USD > 0 && b.usd >= b.limit.USD:
		return fmt.Errorf("$%.4f of $%.2f spent", b.usd, b.limit.USD)
	}
	return nil
}

// Spend records a call's cost.
func (b *Budget) Spend(tokens int64, usd float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tokens += tokens
	b.usd += usd
}

// Witness raises the account to what the run as a whole is known to have
// spent, when that is more: a worker's account sees its own calls, and the
// run's state (as each action arrives) brings in every other worker's. It
// never lowers the account, so nothing is counted twice.
func (b *Budget) Witness(spent loop.Usage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tokens = max(b.tokens, spent.Tokens)
	b.usd = max(b.usd, spent.CostUSD)
}
