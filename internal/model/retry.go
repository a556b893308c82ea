package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a provider. Zero values take the defaults below.
type Options struct {
	// BaseURL overrides the provider's endpoint. For OpenAI it includes the
	// version path (e.g. http://127.0.0.1:8080/v1).
	BaseURL string
	APIKey  string
	// APIKeyEnv names the variable the key comes from, for error messages.
	APIKeyEnv  string
	HTTPClient *http.Client
	// Timeout bounds a whole Stream call, retries and waits included
	// (default 30m, room for a long deep-tier reply).
	Timeout time.Duration
	// StallTimeout cuts an attempt that receives no bytes for this long
	// (default 3m: reasoning models can think silently for a while); the
	// attempt is then retried.
	StallTimeout time.Duration
	// MaxAttempts bounds the attempts per call (default 5).
	MaxAttempts int
	// Sleep waits between attempts; tests inject it.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns a number in [0,1) for backoff jitter.
	Rand func() float64
	// Logger receives one line per retry (default: discard).
	Logger *slog.Logger
}

// Defaults for Options.
const (
	DefaultTimeout      = 30 * time.Minute
	DefaultStallTimeout = 3 * time.Minute
	DefaultMaxAttempts  = 5

	backoffBase = 500 * time.Millisecond
	backoffMax  = 30 * time.Second
	// maxRetryAfter is the longest retry-after we wait; a provider asking
	// for more fails the call at once, since a blocked agent loop is worse
	// than a clear error.
	maxRetryAfter = 5 * time.Minute
)

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = DefaultStallTimeout
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.Sleep == nil {
		o.Sleep = sleepCtx
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	base := o.HTTPClient
	if base == nil {
		base = &http.Client{}
	}
	c := *base
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = &stallTransport{base: rt}
	o.HTTPClient = &c
	return o
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// failure is one failed attempt, classified.
type failure struct {
	retry      bool
	status     int
	typ, msg   string
	retryAfter time.Duration
	err        error
}

// call runs attempt with retries, backoff, the call deadline and the stall
// watch, the same way for every provider.
func call(ctx context.Context, o *Options, provider, modelName string, onDelta func(Delta),
	attempt func(ctx context.Context) (*Response, error), classify func(error) failure) (*Response, error) {
	callCtx, cancel := context.WithTimeoutCause(ctx, o.Timeout, fmt.Errorf("%w after %s", ErrTimeout, o.Timeout))
	defer cancel()
	for n := 1; ; n++ {
		attemptCtx, cancelAttempt := context.WithCancelCause(callCtx)
		watch := &stallWatch{timeout: o.StallTimeout, cancel: cancelAttempt}
		resp, err := attempt(context.WithValue(attemptCtx, stallKey{}, watch))
		cause := context.Cause(attemptCtx)
		watch.stop()
		cancelAttempt(nil)
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s (model %s): %w", provider, modelName, context.Cause(ctx))
		}
		if callCtx.Err() != nil {
			return nil, &APIError{Provider: provider, Model: modelName, Attempts: n, Err: context.Cause(callCtx)}
		}
		var f failure
		if errors.Is(cause, ErrStalled) {
			f = failure{retry: true, err: cause}
		} else {
			f = classify(err)
		}
		apiErr := &APIError{Provider: provider, Model: modelName, Status: f.status, Type: f.typ, Message: f.msg,
			Attempts: n, RetryAfter: f.retryAfter, KeyEnv: o.APIKeyEnv, Err: f.err}
		if !f.retry || n >= o.MaxAttempts {
			return nil, apiErr
		}
		if f.retryAfter > maxRetryAfter {
			apiErr.Message = strings.TrimSpace(fmt.Sprintf("%s (provider asked to retry after %s)", apiErr.Message, f.retryAfter))
			return nil, apiErr
		}
		wait := backoff(n, o.Rand)
		if f.retryAfter > wait {
			wait = f.retryAfter
		}
		if dl, ok := callCtx.Deadline(); ok && time.Until(dl) < wait {
			apiErr.Message = strings.TrimSpace(fmt.Sprintf("%s (the next retry, in %s, would pass the call deadline)", apiErr.Message, wait.Round(time.Millisecond)))
			return nil, apiErr
		}
		why := apiErr.Error()
		o.Logger.Warn("model call failed; retrying", "provider", provider, "model", modelName, "attempt", n, "wait", wait, "err", why)
		if onDelta != nil {
			onDelta(Delta{Type: DeltaRetry, Text: fmt.Sprintf("%s; retrying in %s (attempt %d of %d)", why, wait.Round(time.Millisecond), n+1, o.MaxAttempts)})
		}
		if err := o.Sleep(callCtx, wait); err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%s (model %s): %w", provider, modelName, context.Cause(ctx))
			}
			apiErr.Err = err
			return nil, apiErr
		}
	}
}

// backoff is exponential with equal jitter: between half and all of
// base·2^(n-1), capped.
func backoff(n int, rnd func() float64) time.Duration {
	d := backoffBase << (n - 1)
	if d > backoffMax || d <= 0 {
		d = backoffMax
	}
	return d/2 + time.Duration(rnd()*float64(d/2))
}

// classifyStatus decides on retrying an HTTP error status.
func classifyStatus(status int, h http.Header) failure {
	f := failure{status: status, retryAfter: parseRetryAfter(h, time.Now())}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		f.err = ErrAuth
	case isInvalidStatus(status):
		f.err = ErrInvalidRequest
	case status == http.StatusTooManyRequests:
		f.retry, f.err = true, ErrRateLimited
	case status == http.StatusRequestTimeout || status == http.StatusConflict || status >= 500:
		f.retry = true
	}
	return f
}

// classifyTransport decides on an error that is not an HTTP status: a
// dropped or reset connection, a truncated stream, a malformed event. All
// are retried, within the attempt bound; the caller's cancellation and the
// call deadline are handled before this is asked.
func classifyTransport(err error) failure {
	return failure{retry: true, err: err}
}

// parseRetryAfter reads retry-after-ms, then retry-after as seconds or an
// HTTP date.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("retry-after"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// stallKey carries an attempt's stall watch to the transport.
type stallKey struct{}

// stallWatch cancels an attempt when no bytes arrive for timeout. Reads
// only record the time; the timer checks it when it fires, so the hot
// path costs one atomic store.
type stallWatch struct {
	timeout time.Duration
	cancel  context.CancelCauseFunc
	start   time.Time
	last    atomic.Int64 // nanoseconds since start of the latest activity

	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
}

func (w *stallWatch) arm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || w.timer != nil {
		w.touch()
		return
	}
	w.start = time.Now()
	w.last.Store(0)
	w.timer = time.AfterFunc(w.timeout, w.check)
}

func (w *stallWatch) touch() {
	if !w.start.IsZero() {
		w.last.Store(int64(time.Since(w.start)))
	}
}

func (w *stallWatch) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	idle := time.Since(w.start) - time.Duration(w.last.Load())
	if idle >= w.timeout {
		w.stopped = true
		w.cancel(fmt.Errorf("%w: no data for %s", ErrStalled, w.timeout))
		return
	}
	w.timer.Reset(w.timeout - idle)
}

func (w *stallWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
	}
}

// stallTransport starts the request's stall watch when the request is sent
// and feeds it every read of the response body.
type stallTransport struct{ base http.RoundTripper }

func (t *stallTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	w, _ := req.Context().Value(stallKey{}).(*stallWatch)
	if w == nil {
		return t.base.RoundTrip(req)
	}
	w.arm()
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	w.touch()
	resp.Body = &stallBody{rc: resp.Body, w: w}
	return resp, nil
}

type stallBody struct {
	rc io.ReadCloser
	w  *stallWatch
}

func (b *stallBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.w.touch()
	}
	return n, err
}

func (b *stallBody) Close() error { return b.rc.Close() }
