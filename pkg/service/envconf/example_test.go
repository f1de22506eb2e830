package envconf_test

import (
	"fmt"
	"time"

	"github.com/oncepay/oncepay/pkg/service/envconf"
)

func Example() {
	env := map[string]string{"WORKERS": "none", "SHUTDOWN_GRACE": "-1s", "LOG_LEVEL": "loud"}
	p := envconf.New(func(name string) string { return env[name] })

	addr := p.String("LISTEN_ADDR", "127.0.0.1:8080")
	workers := p.Positive("WORKERS", 8)
	grace := p.Duration("SHUTDOWN_GRACE", 10*time.Second)
	p.Level("LOG_LEVEL", 0)
	if grace <= 0 && !p.Failed("SHUTDOWN_GRACE") {
		p.Fail("SHUTDOWN_GRACE", "must be positive")
	}

	fmt.Println(addr, workers)
	fmt.Println(p.Err())
	// Output:
	// 127.0.0.1:8080 8
	// configuration: WORKERS "none" is not a positive integer
	// LOG_LEVEL "loud" is not a level (debug, info, warn, error)
	// SHUTDOWN_GRACE must be positive
}

// A service lists its configuration by running its loader on an empty
// environment: every variable read, with its default as a person writes it.
func ExampleParser_Vars() {
	p := envconf.New(func(string) string { return "" })
	p.String("LISTEN_ADDR", "127.0.0.1:8080")
	p.Required("DATABASE_URL")
	lease := p.Duration("LEASE", 10*time.Minute)
	p.Duration("MAX_HOLD", 4*lease)
	p.DescribeDefault("MAX_HOLD", "4 × LEASE")

	for _, v := range p.Vars() {
		fmt.Printf("%s %q required=%v\n", v.Name, v.Default, v.Required)
	}
	// Output:
	// LISTEN_ADDR "127.0.0.1:8080" required=false
	// DATABASE_URL "" required=true
	// LEASE "10m" required=false
	// MAX_HOLD "4 × LEASE" required=false
}
