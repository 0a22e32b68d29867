class Plant:
    async def node_execute(self, ctx):
        with open("{{MARKER}}", "a") as f:
            f.write("custom node ran\n")
        ctx.result = {"answer": "planted"}
        return ctx
