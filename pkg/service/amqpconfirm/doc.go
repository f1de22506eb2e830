// Package amqpconfirm keeps publisher confirms exact across amqp091-go's
// recovery: a message counts as published only on the broker's positive
// confirm of that message.
//
// amqp091-go's recovery (Config.Recovery) reopens the same *amqp.Channel:
// it resets the channel's confirm counter, opens the channel on the
// broker, then puts it back in confirm mode. A message sent between the
// open and confirm.select-ok gets a sequence number in the client but none
// on the broker, and from then on each confirm of the channel settles the
// message published before its own: a publish waits for a confirm that
// only the next one brings, and with concurrent publishers a nacked
// message can be reported confirmed. The library's state notifications
// arrive asynchronously, too late to keep publishes out of that window.
//
// Recovery closes it synchronously. It is the connection's
// amqp.ConnectionRecovery, wrapping another (normally
// amqp.DefaultConnectionRecovery, which does the reopening): before that
// one reopens anything, it ends the current generation of every Gate it
// affects, under the gate's write lock; a Gate publishes under its read
// lock, only in an open generation, and each publish waits for its own
// DeferredConfirmation or the end of its generation, whichever comes
// first. A new generation starts when no recovery is in progress and the
// channel is open again, that is, back in confirm mode.
//
// The library offers no other synchronous hook around its reopen than
// ConnectionRecovery, hence this package.
package amqpconfirm
