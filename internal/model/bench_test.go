package model_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-run/sluice/internal/model"
	"github.com/sluice-run/sluice/internal/model/fake"
)

// benchTokens is the length of the benchmark response: the fake server
// streams one word per event, as models stream roughly a token at a time.
const benchTokens = 2000

func benchScript() string {
	words := make([]string, benchTokens)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i%100)
	}
	return fmt.Sprintf("turns:\n- repeat: true\n  response: {text: %q, usage: {input: 10, output: %d}}\n", strings.Join(words, " "), benchTokens)
}

// BenchmarkStream streams a 2,000-token response through each provider,
// SDK client included, from the fake server over loopback HTTP.
func BenchmarkStream(b *testing.B) {
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			_, base := startFake(b, benchScript())
			p := newProvider(kind, base, model.Options{})
			req := userReq("go")
			n := 0
			onDelta := func(d model.Delta) { n += len(d.Text) }
			b.ReportAllocs()
			for b.Loop() {
				resp, err := p.Stream(context.Background(), req, onDelta)
				if err != nil {
					b.Fatal(err)
				}
				if resp.Usage.OutputTokens != benchTokens {
					b.Fatalf("usage %+v", resp.Usage)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchTokens*1000, "ns/1k-tokens")
		})
	}
}

// BenchmarkServerOnly reads the same streams with a bare HTTP client and
// no parsing: the fake server's and loopback's share, to subtract from
// BenchmarkStream to get the client side's.
func BenchmarkServerOnly(b *testing.B) {
	bodies := map[string]struct{ path, body string }{
		"anthropic": {fake.PathMessages, `{"model":"test-model","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"go"}]}`},
		"openai":    {fake.PathChatCompletions, `{"model":"test-model","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"go"}]}`},
	}
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			_, base := startFake(b, benchScript())
			c := &http.Client{}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.Post(base+bodies[kind].path, "application/json", strings.NewReader(bodies[kind].body))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, resp.Body); err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchTokens*1000, "ns/1k-tokens")
		})
	}
}
