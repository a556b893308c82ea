package temporal

import (
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

// LargePayload is the size from which a payload is compressed. Temporal
// refuses a payload over 2 MB; the run's state, which a resume or a
// continued run carries whole, grows by a few kilobytes a task.
const LargePayload = 256 << 10

// DataConverter is the converter every sluice client and worker uses:
// JSON, with payloads of LargePayload bytes or more compressed (zlib), so
// the state of a plan of thousands of tasks still fits in one payload,
// while actions, events and query answers stay plain JSON that the
// Temporal UI and CLI can show.
func DataConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(),
		largeOnly{zlib: converter.NewZlibCodec(converter.ZlibCodecOptions{})})
}

// largeOnly compresses only large payloads; decoding undoes whatever zlib
// encoded, whatever its size.
type largeOnly struct{ zlib converter.PayloadCodec }

func (c largeOnly) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		out[i] = p
		if len(p.GetData()) < LargePayload {
			continue
		}
		enc, err := c.zlib.Encode([]*commonpb.Payload{p})
		if err != nil {
			return payloads, err
		}
		out[i] = enc[0]
	}
	return out, nil
}

func (c largeOnly) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	return c.zlib.Decode(payloads)
}
