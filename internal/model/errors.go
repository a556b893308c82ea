package model

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Sentinel errors callers branch on with errors.Is.
var (
	// ErrAuth: the provider rejected the credentials (HTTP 401 or 403), or
	// there are none. Not retried.
	ErrAuth = errors.New("authentication failed")
	// ErrNoAPIKey: no API key was configured for a provider that needs one.
	ErrNoAPIKey = fmt.Errorf("no API key: %w", ErrAuth)
	// ErrInvalidRequest: the provider rejected the request itself (HTTP 400,
	// 404, 413, 422). Not retried.
	ErrInvalidRequest = errors.New("invalid request")
	// ErrRateLimited: HTTP 429 on the last attempt.
	ErrRateLimited = errors.New("rate limited")
	// ErrStalled: no bytes arrived for the stall timeout.
	ErrStalled = errors.New("stream stalled")
	// ErrTruncated: the stream ended before its final event.
	ErrTruncated = errors.New("stream ended before its final event")
	// ErrTimeout: the call's deadline passed.
	ErrTimeout = errors.New("call timed out")
)

// APIError is the final error of a failed model call: which provider, model
// and HTTP status failed, after how many attempts, and why.
type APIError struct {
	Provider string
	Model    string
	// Status is the HTTP status of the last failed attempt; 0 when the
	// failure was not an HTTP error response (a stall, a dropped connection).
	Status int
	// Type is the provider's error type, e.g. "rate_limit_error".
	Type string
	// Message is the provider's error message.
	Message  string
	Attempts int
	// RetryAfter is what the provider asked to wait, when it said.
	RetryAfter time.Duration
	// KeyEnv names the environment variable that holds the API key, for
	// authentication errors.
	KeyEnv string
	// Err is the underlying cause.
	Err error
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (model %s): ", e.Provider, e.Model)
	switch {
	case e.Status != 0:
		fmt.Fprintf(&b, "HTTP %d %s", e.Status, http.StatusText(e.Status))
		if e.Message != "" {
			fmt.Fprintf(&b, ": %s", e.Message)
		}
	case e.Err != nil:
		b.WriteString(e.Err.Error())
	default:
		b.WriteString("call failed")
	}
	if e.isAuth() {
		env := e.KeyEnv
		if env == "" {
			env = "the provider's API key variable"
		}
		fmt.Fprintf(&b, "; set %s to a valid %s API key", env, e.Provider)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (gave up after %d attempts)", e.Attempts)
	}
	return b.String()
}

func (e *APIError) isAuth() bool {
	return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden || errors.Is(e.Err, ErrAuth)
}

// Is classifies the error by status for errors.Is.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrAuth:
		return e.isAuth()
	case ErrInvalidRequest:
		return isInvalidStatus(e.Status)
	case ErrRateLimited:
		return e.Status == http.StatusTooManyRequests
	}
	return false
}

// Unwrap returns the underlying cause.
func (e *APIError) Unwrap() error { return e.Err }

func isInvalidStatus(s int) bool {
	switch s {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return true
	}
	return false
}
