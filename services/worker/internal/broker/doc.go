// Package broker is the worker's side of RabbitMQ: the topology it declares,
// a connection with amqp091-go's built-in recovery, the epochs that tell a
// delivery of a lost channel session from a live one, and a publisher that
// waits for the broker's confirm of its own message.
//
// Recovery is the library's (amqp091-go Config.Recovery): it redials, reopens
// the channel, reapplies QoS and confirm mode, redeclares the recorded
// topology and re-subscribes the consumer on the same Go delivery channel.
// What it does not do is keep delivery tags apart across sessions: a new
// channel session numbers its deliveries from 1 again, and deliveries read
// before the loss still carry tags of the old one. Epochs closes that gap;
// see its documentation. Nor does it keep publishes out of the moment the
// channel is open again but not yet back in confirm mode, which would make
// every later confirm settle the wrong message; Publisher's gate
// (pkg/service/amqpconfirm) does. Nor does it subscribe again after the
// broker cancelled the consumer (its queue was deleted); Consumer does.
package broker
