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
