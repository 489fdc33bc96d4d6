# pragma version 0.4.3
"""
@title OracleFeed
@notice Chainlink-shaped price feed (8 decimals) whose owner sets the answer,
        so the simulator can move prices and trigger liquidations.
"""

event AnswerUpdated:
    current: indexed(int256)
    roundId: indexed(uint256)
    updatedAt: uint256

owner: public(address)
latestAnswer: public(int256)
latestRound: public(uint256)
latestTimestamp: public(uint256)


@deploy
def __init__(_initialAnswer: int256):
    self.owner = msg.sender
    self._set(_initialAnswer)


@internal
def _set(answer: int256):
    self.latestRound += 1
    self.latestAnswer = answer
    self.latestTimestamp = block.timestamp
    log AnswerUpdated(current=answer, roundId=self.latestRound, updatedAt=block.timestamp)


@pure
@external
def decimals() -> uint8:
    return 8


@view
@external
def latestRoundData() -> (uint80, int256, uint256, uint256, uint80):
    r: uint80 = convert(self.latestRound, uint80)
    return r, self.latestAnswer, self.latestTimestamp, self.latestTimestamp, r


@external
def update(answer: int256):
    assert msg.sender == self.owner, "only owner"
    self._set(answer)
