//go:build race

package influxdblistener

// raceEnabled scales the memory tests down: the race detector makes parsing several times
// slower and gives every goroutine shadow memory of its own.
const raceEnabled = true
