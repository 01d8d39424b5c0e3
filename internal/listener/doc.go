// Package listener holds what morse's network listeners share: Limit, a listener that caps
// and counts connections and, at the cap, closes one that is doing nothing to make room
// (told which by SetActivity or HTTPConnState), and ConnSet, the goroutines of a stream
// listener's connections, which Stop closes and waits for. None of it knows about metrics
// or plugins. The listeners' TLS options, which their configs embed, are in
// plugins/common/tlsserver.
package listener
