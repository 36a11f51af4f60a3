package persistence

// DeriveStatus computes a message's status from its stage, refusal class and the states of
// its deliveries. It is the only place a status is decided; the stored status is a cache of
// it. The first matching rule wins.
func DeriveStatus(stage MessageStage, refusal Refusal, states []DeliveryState) MessageStatus {
	if stage == StageAccepted {
		return StatusReceived
	}
	if len(states) == 0 {
		switch refusal {
		case RefusalRefused:
			return StatusRefused
		case RefusalError:
			return StatusError
		default:
			return StatusNotRouted
		}
	}
	has := make(map[DeliveryState]bool, len(states))
	for _, s := range states {
		has[s] = true
	}
	switch {
	case has[DeliveryFailed]:
		return StatusError
	case has[DeliveryStalled]:
		return StatusStalled
	case has[DeliveryParked] || has[DeliveryPaused]:
		// Both wait for an operator: a blocked session, a paused partner.
		return StatusHeld
	case has[DeliveryRetrying]:
		return StatusRetrying
	case has[DeliveryQueued] || has[DeliveryDelivering]:
		return StatusInProgress
	case has[DeliveryAwaitingAck]:
		return StatusAwaitingReceipt
	case len(has) == 1 && has[DeliverySkipped]:
		return StatusSkipped
	default:
		return StatusDelivered
	}
}

// DeriveStage tells whether a dispatched message is settled: every delivery is final.
// A message with no deliveries after dispatch is settled too (not routed or refused).
func DeriveStage(stage MessageStage, states []DeliveryState) MessageStage {
	if stage == StageAccepted {
		return stage
	}
	for _, s := range states {
		if !s.Final() {
			return StageDispatched
		}
	}
	return StageSettled
}
