package conform

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// op is an attempt of payload p on key k from call to ret, answered out.
func op(k, p string, call, ret int64, out modelOutput) porcupine.Operation {
	return porcupine.Operation{Input: modelInput{Key: k, Payload: p}, Call: call, Return: ret, Output: out}
}

func final(k string, at int64, n int) porcupine.Operation {
	return porcupine.Operation{Input: modelInput{Key: k, Final: true}, Call: at, Return: at + 1, Output: modelOutput{Effects: n}}
}

var (
	ok1      = modelOutput{Class: ansOK, Status: 201, Body: "b1"}
	ok2      = modelOutput{Class: ansOK, Status: 201, Body: "b2"}
	mismatch = modelOutput{Class: ansMismatch, Status: 422}
	busy     = modelOutput{Class: ansNoEffect, Status: 409}
	lost     = modelOutput{Class: ansAmbiguous}
)

func TestModel(t *testing.T) {
	tests := []struct {
		name string
		ops  []porcupine.Operation
		want porcupine.CheckResult
	}{
		{"first wins, replays identical, one effect", []porcupine.Operation{op("k", "a", 0, 10, ok1), op("k", "a", 20, 30, ok1), final("k", 100, 1)}, porcupine.Ok},
		{"409 while the first runs", []porcupine.Operation{op("k", "a", 0, 10, ok1), op("k", "a", 2, 4, busy)}, porcupine.Ok},
		{"422 after another payload was accepted", []porcupine.Operation{op("k", "a", 0, 10, ok1), op("k", "b", 20, 30, mismatch)}, porcupine.Ok},
		{"422 against an overlapping first", []porcupine.Operation{op("k", "a", 0, 10, ok1), op("k", "b", 5, 6, mismatch)}, porcupine.Ok},
		{"lost answer may have taken effect", []porcupine.Operation{op("k", "a", 0, 50, lost), final("k", 100, 1)}, porcupine.Ok},
		{"lost answer may have done nothing", []porcupine.Operation{op("k", "a", 0, 50, lost), final("k", 100, 0)}, porcupine.Ok},
		{"a claim with no effect is taken over by another payload", []porcupine.Operation{op("k", "a", 0, 50, lost), op("k", "b", 10, 20, mismatch), op("k", "b", 60, 70, ok2), final("k", 100, 1)}, porcupine.Ok},
		{"replay with other bytes", []porcupine.Operation{op("k", "a", 0, 10, ok1), op("k", "a", 20, 30, ok2)}, porcupine.Illegal},
		{"another payload accepted", []porcupine.Operation{op("k", "a", 0, 10, ok1), op("k", "b", 20, 30, ok2)}, porcupine.Illegal},
		{"422 with nothing accepted", []porcupine.Operation{op("k", "b", 0, 10, mismatch)}, porcupine.Illegal},
		{"422 for the accepted payload (poisoned key)", []porcupine.Operation{op("k", "a", 0, 10, ok1), op("k", "b", 20, 30, mismatch), op("k", "a", 40, 50, mismatch)}, porcupine.Illegal},
		{"two effects", []porcupine.Operation{op("k", "a", 0, 10, ok1), op("k", "a", 20, 30, ok1), final("k", 100, 2)}, porcupine.Illegal},
		{"an answer but no effect", []porcupine.Operation{op("k", "a", 0, 10, ok1), final("k", 100, 0)}, porcupine.Illegal},
		{"keys are apart", []porcupine.Operation{op("k", "a", 0, 10, ok1), op("j", "b", 20, 30, ok2), final("k", 100, 1), final("j", 100, 1)}, porcupine.Ok},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := checkHistory(tt.ops, 10*time.Second)
			if got := porcupine.CheckResult(v.Result); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			if (len(v.FailingKeys) > 0) != (tt.want == porcupine.Illegal) {
				t.Errorf("failing keys %v for %s", v.FailingKeys, tt.want)
			}
		})
	}
}
