package persistence

import "testing"

func TestDeriveStatus(t *testing.T) {
	d := func(s ...DeliveryState) []DeliveryState { return s }
	tests := []struct {
		name    string
		stage   MessageStage
		refusal Refusal
		states  []DeliveryState
		want    MessageStatus
	}{
		{"accepted wins over everything", StageAccepted, RefusalRefused, d(DeliveryFailed), StatusReceived},
		{"no deliveries, refused", StageSettled, RefusalRefused, nil, StatusRefused},
		{"no deliveries, our error", StageSettled, RefusalError, nil, StatusError},
		{"no deliveries, not routed", StageSettled, RefusalNone, nil, StatusNotRouted},
		{"any failed", StageDispatched, RefusalNone, d(DeliveryDelivered, DeliveryFailed, DeliveryStalled), StatusError},
		{"any stalled", StageDispatched, RefusalNone, d(DeliveryStalled, DeliveryParked), StatusStalled},
		{"any parked", StageDispatched, RefusalNone, d(DeliveryParked, DeliveryRetrying), StatusHeld},
		{"any paused", StageDispatched, RefusalNone, d(DeliveryPaused, DeliveryRetrying, DeliveryQueued), StatusHeld},
		{"failed before paused", StageDispatched, RefusalNone, d(DeliveryPaused, DeliveryFailed), StatusError},
		{"stalled before paused", StageDispatched, RefusalNone, d(DeliveryStalled, DeliveryPaused), StatusStalled},
		{"any retrying", StageDispatched, RefusalNone, d(DeliveryRetrying, DeliveryQueued), StatusRetrying},
		{"queued", StageDispatched, RefusalNone, d(DeliveryQueued, DeliveryAwaitingAck), StatusInProgress},
		{"delivering", StageDispatched, RefusalNone, d(DeliveryDelivering, DeliveryDelivered), StatusInProgress},
		{"awaiting ack", StageDispatched, RefusalNone, d(DeliveryAwaitingAck, DeliveryDelivered), StatusAwaitingReceipt},
		{"all skipped", StageSettled, RefusalNone, d(DeliverySkipped, DeliverySkipped), StatusSkipped},
		{"skipped and delivered", StageSettled, RefusalNone, d(DeliverySkipped, DeliveryDelivered), StatusDelivered},
		{"all delivered", StageSettled, RefusalNone, d(DeliveryDelivered), StatusDelivered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DeriveStatus(tt.stage, tt.refusal, tt.states); got != tt.want {
				t.Errorf("DeriveStatus = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestDeriveStage(t *testing.T) {
	tests := []struct {
		stage  MessageStage
		states []DeliveryState
		want   MessageStage
	}{
		{StageAccepted, nil, StageAccepted},
		{StageDispatched, nil, StageSettled},
		{StageDispatched, []DeliveryState{DeliveryDelivered, DeliveryQueued}, StageDispatched},
		{StageSettled, []DeliveryState{DeliveryQueued}, StageDispatched},
		{StageDispatched, []DeliveryState{DeliveryDelivered, DeliveryFailed, DeliverySkipped}, StageSettled},
		{StageDispatched, []DeliveryState{DeliveryStalled}, StageDispatched},
	}
	for _, tt := range tests {
		if got := DeriveStage(tt.stage, tt.states); got != tt.want {
			t.Errorf("DeriveStage(%s, %v) = %s, want %s", tt.stage, tt.states, got, tt.want)
		}
	}
}
