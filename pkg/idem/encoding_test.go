package idem_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncepay/oncepay/pkg/idem"
)

// minListpackValue is the hash-max-listpack-value that every Redis oncepay
// starts is given (scripts/harness, docker-compose.yml, the Helm chart's
// redis.hashMaxListpackValue): the api's stored answer must fit in it.
const minListpackValue = 2048

// TestRecordStaysListpack: a payment's record, both stages completed with
// answers shaped like the api's and the worker's, is one hash that Redis
// keeps as a listpack (about 1 KB) rather than a hashtable (about 1.6-1.8 KB),
// provided the server runs with hash-max-listpack-value >= 2048. With Redis's
// default of 64 the api's answer alone turns every record into a hashtable.
func TestRecordStaysListpack(t *testing.T) {
	t.Parallel()
	s, rdb := newStore(t, idem.Config{Lease: 10 * time.Second, Retention: 24 * time.Hour})
	ctx := context.Background()

	cfg, err := rdb.ConfigGet(ctx, "hash-max-listpack-value").Result()
	if err != nil {
		t.Fatalf("CONFIG GET hash-max-listpack-value: %v", err)
	}
	limit, err := strconv.Atoi(cfg["hash-max-listpack-value"])
	if err != nil {
		t.Fatalf("CONFIG GET hash-max-listpack-value = %v: %v", cfg, err)
	}
	if limit < minListpackValue {
		t.Fatalf("the test Redis runs with hash-max-listpack-value %d, want at least %d, so that boundary "+
			"records stay listpacks: start it with --hash-max-listpack-value %d as scripts/harness, "+
			"docker-compose.yml and the Helm chart (redis.hashMaxListpackValue) do; a harness Redis "+
			"started before that setting needs `scripts/harness restart redis`", limit, minListpackValue, minListpackValue)
	}

	for _, tt := range []struct {
		name                  string
		customer, description string
	}{
		{"typical", "cust_000042", "k6 steady 12345"},
		{"longest ASCII customer and description", strings.Repeat("c", 64), strings.Repeat("d", 255)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k := newKey(t)
			const id = "pay_01JDZ8Q4M2X7K9V3T6R1B5N8C0"
			body, err := json.Marshal(map[string]any{
				"id": id, "merchant_id": "merchant_a", "status": "pending", "amount": 1999, "currency": "EUR",
				"customer_id": tt.customer, "description": tt.description, "created_at": "2026-11-21T10:54:37.123456Z",
			})
			if err != nil {
				t.Fatal(err)
			}
			answer, err := idem.Response{Status: 202, Body: append(body, '\n'), Header: map[string][]string{
				"Content-Type": {"application/json"}, "Location": {"/v1/payments/" + id},
			}}.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if len(answer) <= 64 || len(answer) > minListpackValue {
				t.Fatalf("the stored answer is %d bytes; the test needs one between Redis's default 64 and %d", len(answer), minListpackValue)
			}
			fp, err := idem.Fingerprint("POST", "/v1/payments", body)
			if err != nil {
				t.Fatal(err)
			}
			api := begin(t, s, k, "api", fp)
			if err := api.Lease.Complete(ctx, answer); err != nil {
				t.Fatal(err)
			}
			charge := begin(t, s, k, "charge", fp)
			if err := charge.Lease.Complete(ctx, []byte(`{"payment_id":"`+id+`","status":"succeeded","psp_charge_id":"ch_0123456789abcdef"}`)); err != nil {
				t.Fatal(err)
			}

			enc, err := rdb.ObjectEncoding(ctx, k.String()).Result()
			if err != nil {
				t.Fatal(err)
			}
			mem, _ := rdb.MemoryUsage(ctx, k.String()).Result()
			t.Logf("record %s: %d-byte answer, encoding %s, MEMORY USAGE %d bytes", k, len(answer), enc, mem)
			if enc != "listpack" {
				t.Errorf("record %s is a %s, want a listpack (hash-max-listpack-value %d, answer %d bytes)", k, enc, limit, len(answer))
			}
		})
	}
}
