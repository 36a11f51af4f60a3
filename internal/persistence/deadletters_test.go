package persistence

import "testing"

// Narrow keeps a filter to the dead-letter states an action takes.
func TestDeliveryActionNarrow(t *testing.T) {
	for _, tc := range []struct {
		action DeliveryAction
		state  DeliveryState
		ok     bool
		want   DeliveryState
	}{
		{ActionResubmit, "", true, DeliveryFailed},
		{ActionRedeliver, "", true, DeliveryFailed},
		{ActionSkip, "", true, ""},
		{ActionSkip, DeliveryParked, true, DeliveryParked},
		{ActionResubmit, DeliveryParked, false, DeliveryParked},
		{ActionRedeliver, DeliveryFailed, true, DeliveryFailed},
		{"purge", "", false, ""},
	} {
		f := DeadLetterFilter{State: tc.state}
		if ok := tc.action.Narrow(&f); ok != tc.ok || f.State != tc.want {
			t.Errorf("%s narrows state %q to %q, %v; want %q, %v", tc.action, tc.state, f.State, ok, tc.want, tc.ok)
		}
	}
}
