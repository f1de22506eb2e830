package redisinfo_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/oncepay/oncepay/loadtest/bench/redisinfo"
)

func TestCalls(t *testing.T) {
	t.Parallel()
	info := "# Commandstats\r\n" +
		"cmdstat_evalsha:calls=4000,usec=9000,usec_per_call=2.25,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_config|resetstat:calls=1,usec=10,usec_per_call=10.00,rejected_calls=0,failed_calls=0\r\n" +
		"# CPU\r\nused_cpu_sys:1.5\r\n"
	want := map[string]int64{"evalsha": 4000, "config|resetstat": 1}
	if diff := cmp.Diff(want, redisinfo.Calls(info)); diff != "" {
		t.Errorf("Calls (-want +got):\n%s", diff)
	}
}
