package message_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncepay/oncepay/pkg/message"
)

func TestCarrierReadsAndWritesStringHeaders(t *testing.T) {
	t.Parallel()
	p := message.Wrap("pay_1", "m_1", "key-1", []byte(`{}`))
	c := message.Carrier(p.Headers)
	c.Set(message.HeaderTraceParent, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	p.Headers["x-retry-count"] = int32(2) // not a string: not a propagation field

	if got, want := p.Headers[message.HeaderTraceParent], "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"; got != want {
		t.Errorf("publishing header traceparent = %v, want %v", got, want)
	}
	if got := c.Get(message.HeaderTraceState); got != "" {
		t.Errorf("Get(tracestate) = %q, want empty", got)
	}
	if got := message.Carrier(amqp.Table{"x-retry-count": int32(1)}).Get("x-retry-count"); got != "" {
		t.Errorf("Get of an int header = %q, want empty", got)
	}
	keys := c.Keys()
	slices.Sort(keys)
	want := []string{message.HeaderTraceParent, message.HeaderIdempotencyKey, message.HeaderMerchantID}
	slices.Sort(want)
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("Keys() (-want +got):\n%s", diff)
	}
}
