package consumer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"
)

func TestSessionTrack(t *testing.T) {
	type read struct {
		tag   uint64
		epoch uint64
	}
	type got struct {
		Live    bool
		Session uint64
	}
	tests := []struct {
		name  string
		reads []read
		want  []got
	}{
		{
			name:  "one session",
			reads: []read{{1, 0}, {2, 0}, {3, 0}},
			want:  []got{{true, 0}, {true, 0}, {true, 0}},
		},
		{
			name: "recovery: leftovers of the lost session are stale, tag 1 starts the new one",
			// tags 1-2 read, connection lost (epoch 1), tags 3-4 still buffered, then the new session.
			reads: []read{{1, 0}, {2, 0}, {3, 1}, {4, 1}, {1, 1}, {2, 1}},
			want:  []got{{true, 0}, {true, 0}, {false, 0}, {false, 0}, {true, 1}, {true, 1}},
		},
		{
			name:  "two recoveries in a row",
			reads: []read{{1, 0}, {1, 2}, {2, 2}, {7, 3}, {1, 3}},
			want:  []got{{true, 0}, {true, 1}, {true, 1}, {false, 0}, {true, 2}},
		},
		{
			name:  "tags restart without an epoch change: counted as a new session",
			reads: []read{{1, 0}, {2, 0}, {1, 0}},
			want:  []got{{true, 0}, {true, 0}, {true, 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s session
			var gots []got
			for _, r := range tt.reads {
				tr, live := s.track(amqp.Delivery{DeliveryTag: r.tag}, r.epoch)
				gots = append(gots, got{Live: live, Session: tr.session})
			}
			if diff := cmp.Diff(tt.want, gots); diff != "" {
				t.Errorf("track (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSessionLive(t *testing.T) {
	var s session
	old, _ := s.track(amqp.Delivery{DeliveryTag: 1}, 0)
	if !s.live(old) {
		t.Fatal("delivery of the current session is not live")
	}
	if _, ok := s.track(amqp.Delivery{DeliveryTag: 1}, 1); !ok {
		t.Fatal("first delivery of the new session is stale")
	}
	if s.live(old) {
		t.Error("delivery of the lost session is still live")
	}
}

func TestIntHeader(t *testing.T) {
	tests := []struct {
		v    any
		want int
	}{
		{nil, 0}, {"3", 0}, {int8(2), 2}, {int16(3), 3}, {int32(4), 4}, {int64(5), 5}, {int(6), 6},
		{uint8(7), 7}, {uint16(8), 8}, {uint32(9), 9}, {uint64(10), 10}, {int32(-1), 0},
	}
	for _, tt := range tests {
		if got := intHeader(amqp.Table{"x": tt.v}, "x"); got != tt.want {
			t.Errorf("intHeader(%T %v) = %d, want %d", tt.v, tt.v, got, tt.want)
		}
	}
}
