package model

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"

	"github.com/tidwall/gjson"
)

// Why sluice reads the event stream itself.
//
// Both providers build and send their requests through the official SDKs
// (parameters, encoding, authentication, base URL, error statuses), asking
// for the raw *http.Response, which both SDKs document as handing the body
// over unread. The SDKs' own stream decoders unmarshal every event into the
// full response union through a reflection-heavy JSON layer; on a long reply
// that was 7 to 18 ms of CPU per 1,000 tokens, almost all of the client
// side. sseReader and the small event structs in anthropic.go and openai.go
// decode only the fields sluice uses, with encoding/json, in a fraction of
// that. BenchmarkStream and BenchmarkServerOnly measure the difference.

// maxEventBytes bounds one event, as the SDKs' decoders do, so a server that
// never ends a line cannot exhaust memory.
const maxEventBytes = 32 << 20

// errEventTooLarge is returned for an event over maxEventBytes.
var errEventTooLarge = fmt.Errorf("server-sent event larger than %d bytes", maxEventBytes)

// sseReader reads server-sent events (the text/event-stream format): lines
// "event: NAME" and "data: VALUE", an event ending at a blank line, lines
// starting with ':' being comments. Several data lines join with '\n'.
type sseReader struct {
	r    *bufio.Reader
	name []byte
	data []byte
	line []byte // assembles a line longer than the buffer
	// hasData is whether the event being read has a data line; one
	// without is not dispatched.
	hasData bool
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 16<<10)}
}

// next returns the next event's name and data, valid until the next call.
// It returns io.EOF when the stream ends; an event the stream ends inside
// of, without its blank line, is dropped, as the format requires, so a cut
// stream never yields half an event.
func (s *sseReader) next() (name, data []byte, err error) {
	s.name, s.data, s.hasData = s.name[:0], s.data[:0], false
	for {
		line, err := s.readLine()
		if err != nil {
			return nil, nil, err
		}
		if len(line) == 0 {
			if !s.hasData {
				s.name = s.name[:0]
				continue
			}
			return s.name, s.data, nil
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "event":
			s.name = append(s.name[:0], value...)
		case "data":
			if s.hasData {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, value...)
			s.hasData = true
			if len(s.data) > maxEventBytes {
				return nil, nil, errEventTooLarge
			}
		}
		// Comments (field "") and other fields (id, retry) are ignored.
	}
}

// readLine returns one line without its line ending (\n or \r\n). A
// final line without a line ending is dropped with io.EOF, since the event
// it belongs to cannot be complete.
func (s *sseReader) readLine() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		s.line = append(s.line[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(s.line) > maxEventBytes {
				return nil, errEventTooLarge
			}
			line, err = s.r.ReadSlice('\n')
			s.line = append(s.line, line...)
		}
		line = s.line
	}
	if err != nil {
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// streamError is an error event inside a 200 stream: the server failed
// part-way through its reply.
type streamError struct {
	Type    string
	Message string
}

func (e *streamError) Error() string {
	if e.Type == "" {
		return "error event in stream: " + e.Message
	}
	return fmt.Sprintf("error event in stream: %s: %s", e.Type, e.Message)
}

// parseEvent checks that an event's data is one whole JSON value and
// returns it for reading with gjson paths.
func parseEvent(name, data []byte) (gjson.Result, error) {
	s := string(data)
	if !gjson.Valid(s) {
		return gjson.Result{}, fmt.Errorf("%s event is not valid JSON: %.200s", cmp.Or(string(name), "unnamed"), s)
	}
	return gjson.Parse(s), nil
}
