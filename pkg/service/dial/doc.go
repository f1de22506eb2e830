// Package dial builds the clients of the stateful tier from the services'
// environment contract: a redis.UniversalClient from REDIS_MODE and
// REDIS_URL (Redis, CheckRedis) and an amqp091-go Config.Dial that rotates
// through the nodes of a comma-separated AMQP_URL (AMQPNodes).
//
// Its errors never quote a URL: URLs carry passwords.
package dial
