package persistence

import "time"

// StatusCount is the number of messages in one status: all of them, and those created
// since each time a count was asked for.
type StatusCount struct {
	Status MessageStatus
	Total  int
	// Since holds one count per time given to CountMessagesByStatus, in the same order.
	Since []int
}

// HourCount is the number of messages of one status created in one UTC hour.
type HourCount struct {
	Hour   time.Time // the start of the hour, in UTC
	Status MessageStatus
	Count  int
}
