package model

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestSSEReader(t *testing.T) {
	long := strings.Repeat("x", 40<<10) // longer than the reader's buffer
	in := ": comment\r\n" +
		"event: message_start\r\ndata: {\"a\":1}\r\n\r\n" +
		"event: ping\n\n" + // no data: not dispatched, and its name must not leak
		"data: [DONE]\n\n" +
		"data: line one\ndata: line two\nid: 7\n\n" +
		"data: " + long + "\n\n" +
		"event: message_stop\ndata: {\"cut" // no blank line: dropped
	type ev struct{ name, data string }
	want := []ev{
		{"message_start", `{"a":1}`},
		{"", "[DONE]"},
		{"", "line one\nline two"},
		{"", long},
	}
	r := newSSEReader(strings.NewReader(in))
	for i, w := range want {
		name, data, err := r.next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if string(name) != w.name || string(data) != w.data {
			t.Errorf("event %d = %q %.40q, want %q %.40q", i, name, data, w.name, w.data)
		}
	}
	if _, data, err := r.next(); err != io.EOF {
		t.Errorf("after the last whole event: data %q, err %v; want io.EOF", data, err)
	}
}

func TestStreamErrorClassification(t *testing.T) {
	overloaded := anthropicStreamError([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	invalid := anthropicStreamError([]byte(`{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`))
	garbled := anthropicStreamError([]byte(`not json`))
	for _, c := range []struct {
		name     string
		f        failure
		retry    bool
		typ, msg string
	}{
		{"anthropic overloaded", classifyAnthropic(overloaded), true, "overloaded_error", "Overloaded"},
		{"anthropic invalid request", classifyAnthropic(invalid), false, "invalid_request_error", "bad"},
		{"anthropic unparsable", classifyAnthropic(garbled), true, "", "not json"},
	} {
		if c.f.retry != c.retry || c.f.typ != c.typ || c.f.msg != c.msg {
			t.Errorf("%s: retry=%v type=%q msg=%q, want %v %q %q", c.name, c.f.retry, c.f.typ, c.f.msg, c.retry, c.typ, c.msg)
		}
		var se *streamError
		if !errors.As(c.f.err, &se) {
			t.Errorf("%s: err %v is not a stream error", c.name, c.f.err)
		}
	}
}
