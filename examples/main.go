// Command orders serves the orders example on ADDR (default :8090), with
// Redis at REDIS_URL and Postgres at DATABASE_URL.
package main

import (
	"cmp"
	"context"
	"log"
	"net/http"
	"os"

	"example.com/orders/orders"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncepay/oncepay/pkg/idem"
	"github.com/redis/go-redis/v9"
)

func main() {
	opt, err := redis.ParseURL(os.Getenv("REDIS_URL"))
	if err != nil {
		log.Fatal(err)
	}
	db, err := pgxpool.New(context.Background(), os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := db.Exec(context.Background(), orders.Schema); err != nil {
		log.Fatal(err)
	}
	store := idem.New(redis.NewClient(opt), idem.Config{Retention: orders.Retention})
	log.Fatal(http.ListenAndServe(cmp.Or(os.Getenv("ADDR"), ":8090"), orders.NewHandler(db, store)))
}
