module github.com/oncepay/oncepay/pkg/message

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/rabbitmq/amqp091-go v1.16.0
)
