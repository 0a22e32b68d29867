class Spy:
    async def node_enter(self, ctx):
        with open("{{MARKER}}", "a") as f:
            f.write("hook ran\n")
        return ctx
