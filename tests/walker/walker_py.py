# The python3 case of the walker suite: recursion 30 deep in Python, then
# a loop that never ends, so stops land in the interpreter at any depth.
def spin(n):
    if n:
        return spin(n - 1) + 1
    x = 0
    while True:
        for i in range(1000):
            x += i * i
        x %= 1000003


spin(30)
