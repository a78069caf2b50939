def add_arguments(p):
    p.add_argument("--quick", action="store_true")
def main(args):
    raise NotImplementedError
