from .cli import run

if __name__ == "__main__":  # spawned worker processes import this module under another name
    run()
