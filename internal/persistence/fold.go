package persistence

// DeliveryStateFromHistory folds a delivery's history into the state it is in: every
// delivery is made queued, and each delivery_changed line moves it to its to_state.
// lines are the delivery's history in the order they were written (lines of other kinds
// are passed over). The deliveries table keeps the state as a column because claims
// select by it; this is the rule that column must agree with.
func DeliveryStateFromHistory(lines []HistoryEntry) DeliveryState {
	st := DeliveryQueued
	for _, h := range lines {
		if h.Kind == HistoryDeliveryChanged && h.ToState != "" {
			st = DeliveryState(h.ToState)
		}
	}
	return st
}
