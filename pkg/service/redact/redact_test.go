package redact

import (
	"fmt"
	"strings"
	"testing"
)

func TestSecret(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		// Postgres URLs (pgx)
		{"pg url", "postgres://oncepay:s3cret@db:5432/oncepay?sslmode=disable", "postgres://oncepay:xxxxx@db:5432/oncepay?sslmode=disable"},
		{"postgresql url", "postgresql://u:s3cret@db/x", "postgresql://u:xxxxx@db/x"},
		{"pg url without password", "postgres://u@db/x", "postgres://u@db/x"},
		{"pg url password query", "postgres://u@db/x?sslmode=disable&password=s3cret", "postgres://u@db/x?sslmode=disable&password=xxxxx"},
		{"pg url password first query", "postgres://db/x?password=s3cret&user=u", "postgres://db/x?password=xxxxx&user=u"},
		{"pg url sslpassword", "postgres://u:a@db/x?sslpassword=s3cret", "postgres://u:xxxxx@db/x?sslpassword=xxxxx"},
		{"pg url upper-case query", "postgres://db/x?PASSWORD=s3cret", "postgres://db/x?PASSWORD=xxxxx"},
		{"pg multi-host url", "postgres://u:s3cret@h1:5432,h2:5433/x", "postgres://u:xxxxx@h1:5432,h2:5433/x"},
		{"pg url unescaped @ in password", "postgres://u:s3@cret@db/x", "postgres://u:xxxxx@db/x"},
		{"pg url unescaped # and / in password", "postgres://u:s3#c/ret@db/x", "postgres://u:xxxxx@db/x"},
		{"pg url escaped password", "postgres://u:s3%40cret@db/x", "postgres://u:xxxxx@db/x"},
		// Postgres keyword/value (libpq)
		{"kv", "host=db port=5432 user=u password=s3cret dbname=x", "host=db port=5432 user=u password=xxxxx dbname=x"},
		{"kv password last", "host=db password=s3cret", "host=db password=xxxxx"},
		{"kv spaces around =", "host=db password = s3cret dbname=x", "host=db password = xxxxx dbname=x"},
		{"kv quoted", "host=db password='s3 cr\\'et' dbname=x", "host=db password=xxxxx dbname=x"},
		{"kv quoted empty", "password='' host=db", "password=xxxxx host=db"},
		{"kv escaped unquoted", `password=s3\ cret host=db`, "password=xxxxx host=db"},
		{"kv upper-case keyword", "host=db PASSWORD=s3cret", "host=db PASSWORD=xxxxx"},
		{"kv sslpassword", "host=db sslpassword=s3cret", "host=db sslpassword=xxxxx"},
		{"kv tabs and newlines", "host=db\tpassword=s3cret\nuser=u", "host=db\tpassword=xxxxx\nuser=u"},
		{"kv unterminated quote", "host=db password='s3cret", "host=db xxxxx"},
		{"kv garbage after password", "host=db password=s3cret trailing", "host=db xxxxx"},
		{"kv value with ://", "host=db options='-c x=a://b' password=s3cret", "host=db options='-c x=a://b' password=xxxxx"},
		{"kv without password", "host=db user=u", "host=db user=u"},
		// Redis and AMQP URLs
		{"redis password only", "redis://:s3cret@redis:6379/0", "redis://:xxxxx@redis:6379/0"},
		{"redis user and password", "rediss://default:s3cret@redis:6380/1", "rediss://default:xxxxx@redis:6380/1"},
		{"redis no password", "redis://127.0.0.1:6379/2", "redis://127.0.0.1:6379/2"},
		{"redis password query", "redis://redis:6379/0?password=s3cret", "redis://redis:6379/0?password=xxxxx"},
		{"amqp", "amqp://oncepay:s3cret@rabbitmq:5672/", "amqp://oncepay:xxxxx@rabbitmq:5672/"},
		{"amqps vhost", "amqps://u:s3cret@mq/%2fprod", "amqps://u:xxxxx@mq/%2fprod"},
		{"amqp node list", "amqp://u:s3cret@mq1:5672/,amqp://u:s3cret@mq2:5672/", "amqp://u:xxxxx@mq1:5672/,amqp://u:xxxxx@mq2:5672/"},
		{"redis cluster seeds", "redis://:s3cret@r1:6379?addr=r2:6379&addr=r3:6379", "redis://:xxxxx@r1:6379?addr=r2:6379&addr=r3:6379"},
		// neither
		{"plain", "127.0.0.1:8080", "127.0.0.1:8080"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Secret(tt.in)
			if got != tt.want {
				t.Errorf("Secret(%q) = %q, want %q", tt.in, got, tt.want)
			}
			for _, secret := range []string{"s3cret", "s3 cr", "cret"} {
				if strings.Contains(tt.in, secret) && strings.Contains(got, secret) {
					t.Errorf("Secret(%q) = %q still holds %q", tt.in, got, secret)
				}
			}
		})
	}
}

func ExampleSecret() {
	fmt.Println(Secret("host=db user=oncepay password='p w' dbname=oncepay"))
	fmt.Println(Secret("postgres://oncepay@db/oncepay?password=pw"))
	fmt.Println(Secret("redis://:pw@redis:6379/0"))
	// Output:
	// host=db user=oncepay password=xxxxx dbname=oncepay
	// postgres://oncepay@db/oncepay?password=xxxxx
	// redis://:xxxxx@redis:6379/0
}
