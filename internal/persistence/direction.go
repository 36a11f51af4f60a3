package persistence

// Direction tells a message a partner sent us (inbound) from one we send a partner
// (outbound). It is read from the kinds of the message's parties, never stored.
type Direction string

const (
	DirectionInbound  Direction = "inbound"
	DirectionOutbound Direction = "outbound"
)

var AllDirections = []Direction{DirectionInbound, DirectionOutbound}

func ParseDirection(s string) (Direction, error) { return parseEnum("direction", s, AllDirections) }
